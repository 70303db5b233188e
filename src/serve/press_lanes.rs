//! Where presses wait for their turn. Anyone who sees a card can press its buttons, and each
//! press is answered on the platform (which may be slow or rate-limited), so a flood of
//! presses must stay bounded — without an admin's press waiting behind it. Presses by an admin
//! of the chat's bridge have a lane of their own; everyone else's share a smaller one, where
//! one presser may have only a few in flight.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tollgate_surface::Platform;

/// Admins' presses handled at once (each is a store write and a few platform calls).
pub const ADMIN_PRESSES_AT_ONCE: usize = 32;

/// Admins' presses that may wait for a turn; past this one is dropped (and logged). Admins
/// press rarely: only a misbehaving admin client meets it.
pub const ADMIN_PRESSES_IN_FLIGHT_CAP: usize = 256;

/// Other presses handled at once: each is refused or answers a question, so few suffice.
pub const OTHER_PRESSES_AT_ONCE: usize = 8;

/// Other presses that may wait for a turn, from everyone together.
pub const OTHER_PRESSES_IN_FLIGHT_CAP: usize = 64;

/// Presses one non-admin may have in flight: a flood from one account fills only its share.
pub const PRESSES_PER_PRESSER: usize = 4;

/// Who pressed: the platform and the presser's id there.
type Presser = (Platform, i64);

/// Presses in flight by presser.
type Counts = Arc<Mutex<HashMap<Presser, usize>>>;

/// The two lanes.
pub struct PressLanes {
    admins: Lane,
    others: Lane,
    /// Non-admins' presses in flight, by presser (platform and id); an entry leaves at
    /// zero, so the map holds at most [`OTHER_PRESSES_IN_FLIGHT_CAP`] pressers.
    per_presser: Counts,
}

struct Lane {
    permits: Arc<Semaphore>,
    in_flight: Arc<AtomicUsize>,
    cap: usize,
}

/// Why a press was not let in line.
#[derive(Debug, PartialEq, Eq)]
pub enum Dropped {
    /// The lane holds as many presses as it may.
    LaneFull(usize),
    /// This presser already has as many presses in flight as one may.
    PresserBusy(usize),
}

/// A press's place in line: counted in flight until dropped, however its task ends.
pub struct Place {
    permits: Arc<Semaphore>,
    _counted: Counted,
}

impl Place {
    /// Waits for the press's turn; `None` only if the lane is gone.
    pub async fn turn(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().acquire_owned().await.ok()
    }
}

/// Counts a press down when its place is dropped.
struct Counted {
    in_flight: Arc<AtomicUsize>,
    presser: Option<(Presser, Counts)>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        if let Some((who, per_presser)) = &self.presser {
            let mut counts = per_presser.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(count) = counts.get_mut(who) {
                *count = count.saturating_sub(1);
                if *count == 0 {
                    counts.remove(who);
                }
            }
        }
    }
}

impl Default for PressLanes {
    fn default() -> Self {
        let lane = |at_once, cap| Lane {
            permits: Arc::new(Semaphore::new(at_once)),
            in_flight: Arc::default(),
            cap,
        };
        PressLanes {
            admins: lane(ADMIN_PRESSES_AT_ONCE, ADMIN_PRESSES_IN_FLIGHT_CAP),
            others: lane(OTHER_PRESSES_AT_ONCE, OTHER_PRESSES_IN_FLIGHT_CAP),
            per_presser: Arc::default(),
        }
    }
}

impl PressLanes {
    /// A place in line for a press by `presser` (platform and id), in the admins' lane if
    /// `admin`; never waits.
    pub fn enter(&self, admin: bool, presser: Presser) -> Result<Place, Dropped> {
        let lane = if admin { &self.admins } else { &self.others };
        if lane.in_flight.fetch_add(1, Ordering::SeqCst) >= lane.cap {
            lane.in_flight.fetch_sub(1, Ordering::SeqCst);
            return Err(Dropped::LaneFull(lane.cap));
        }
        let mut counted = Counted {
            in_flight: lane.in_flight.clone(),
            presser: None,
        };
        if !admin {
            let mut counts = self.per_presser.lock().unwrap_or_else(|p| p.into_inner());
            let count = counts.entry(presser).or_default();
            if *count >= PRESSES_PER_PRESSER {
                return Err(Dropped::PresserBusy(PRESSES_PER_PRESSER));
            }
            *count += 1;
            counted.presser = Some((presser, self.per_presser.clone()));
        }
        Ok(Place {
            permits: lane.permits.clone(),
            _counted: counted,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{
        ADMIN_PRESSES_IN_FLIGHT_CAP, Dropped, OTHER_PRESSES_IN_FLIGHT_CAP, PRESSES_PER_PRESSER,
        Platform, PressLanes,
    };

    /// One presser fills only its share; many fill only the others' lane; an admin's press
    /// still gets in; a place given back makes room again.
    #[test]
    fn a_flood_fills_its_own_lane_and_share_only() {
        let lanes = PressLanes::default();
        let mut held = Vec::new();
        for _ in 0..PRESSES_PER_PRESSER {
            held.push(lanes.enter(false, (Platform::Telegram, 11)).unwrap());
        }
        assert_eq!(
            lanes.enter(false, (Platform::Telegram, 11)).err(),
            Some(Dropped::PresserBusy(PRESSES_PER_PRESSER))
        );
        // The same id on another platform is another presser.
        held.push(lanes.enter(false, (Platform::Discord, 11)).unwrap());
        let mut presser = 100;
        while held.len() < OTHER_PRESSES_IN_FLIGHT_CAP {
            if let Ok(place) = lanes.enter(false, (Platform::Telegram, presser)) {
                held.push(place);
            } else {
                presser += 1;
            }
        }
        assert_eq!(
            lanes.enter(false, (Platform::Telegram, 9_999)).err(),
            Some(Dropped::LaneFull(OTHER_PRESSES_IN_FLIGHT_CAP))
        );
        let admin = lanes.enter(true, (Platform::Telegram, 1)).unwrap();
        drop(held.remove(0));
        assert!(lanes.enter(false, (Platform::Telegram, 11)).is_ok());
        drop(admin);
        let admins: Vec<_> = (0..ADMIN_PRESSES_IN_FLIGHT_CAP)
            .map(|_| lanes.enter(true, (Platform::Telegram, 1)).unwrap())
            .collect();
        assert!(lanes.enter(true, (Platform::Telegram, 1)).is_err());
        drop(admins);
        assert!(lanes.enter(true, (Platform::Telegram, 1)).is_ok());
        drop(held);
        assert!(
            lanes.per_presser.lock().unwrap().is_empty(),
            "nobody is remembered once their presses are done"
        );
    }
}
