//! The journal: what makes a flush durable. A flush appends the writes accepted since the last
//! one to a journal file as one record and syncs it — one sequential write and one sync, no
//! B-tree — and the database is brought up to date later, in one transaction for everything
//! written meanwhile (`Shared::apply`): a key written by many turns (a session's transcript)
//! is written to the database once, and an entry put and deleted in between (a run's
//! open-runs mark) not at all.
//!
//! Generations: each apply closes the generation being written and starts the next, and the
//! database records, in the apply's own transaction, the last generation it holds. At open,
//! every later generation is replayed into the database, record by record in the order they
//! were written. A generation's records carry its number and a checksum; replay of a file
//! stops at the first record that is torn, damaged or of another generation (a file is reused
//! once the database holds its generation, so what follows its last record is older).
//!
//! A file's header names the database it belongs to (a random number the database keeps): a
//! database made afresh beside old files (its file deleted to start over) replays none of
//! them. It also holds a random number drawn when the header is written, which every record's
//! checksum covers: a record left from the file's earlier use cannot pass for one of the
//! header's, even under the same generation (a header a power cut lost, read as an older
//! one, would otherwise give the next open that generation again).
//!
//! Files are reused rather than made afresh: a file that keeps its length is synced without
//! its inode (`fdatasync` writes only the data), as the database's own log is.

use super::pending::Committing;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The journal's files in the store's directory: `tollgate.journal-0`, `-1`, …
const FILE_PREFIX: &str = "tollgate.journal-";

/// A file's first bytes: this, the database's number, the generation it holds, the header's
/// own random number, and their checksum.
const MAGIC: &[u8; 8] = b"TGJRNL02";
const HEADER_LEN: usize = 8 + 8 + 8 + 8 + 4;

/// A record's own header: the payload's length, the generation, the checksum of the file
/// header's random number, these two and the payload.
const RECORD_HEADER_LEN: usize = 4 + 8 + 4;

/// A record's payload is cut at this size (a flush of more writes becomes several records).
const RECORD_PAYLOAD_MAX: usize = 64 << 20;

/// One write as the journal holds it (`None`: a deletion).
pub(super) type Replayed = (String, Vec<u8>, Option<Vec<u8>>);

pub(super) struct Journal {
    dir: PathBuf,
    /// The number of the database this journal belongs to.
    database: u64,
    slots: Vec<Slot>,
    /// The number the next new file is named with: past every file found at open or made
    /// since, so that a file an operator removed leaves no name to collide with.
    next_name: u64,
    /// The file being written, chosen at the first write of a generation.
    current: Option<usize>,
    /// The random number of the current file's header (drawn when it is written).
    nonce: u64,
    /// The generation being written.
    generation: u64,
    /// Where the next record goes in the current file (0: its header goes first).
    end: u64,
    /// Every generation up to this one is in the database: a file holding one may be reused.
    applied: u64,
}

struct Slot {
    file: File,
    /// The generation of this database its header names (0: none, one that could not be
    /// read, or another database's).
    generation: u64,
    /// Whether the directory was synced since the file was made: a record in a file whose
    /// name a crash could lose is not durable.
    name_synced: bool,
}

/// What a file's header says.
struct Header {
    database: u64,
    generation: u64,
    nonce: u64,
}

impl Journal {
    /// Opens the journal's files in `dir` for database number `database`, which holds every
    /// generation up to `applied`. Returns the writes of the later generations, in the order written, and the
    /// last of those generations: the caller puts them in the database and then calls
    /// [`Journal::applied_through`]. Nothing is written until then.
    pub fn open(
        dir: &Path,
        database: u64,
        applied: u64,
    ) -> io::Result<(Journal, Vec<Replayed>, u64)> {
        let mut found: Vec<(u64, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(number) = name
                .to_str()
                .and_then(|n| n.strip_prefix(FILE_PREFIX))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            found.push((number, entry.path()));
        }
        found.sort();
        let next_name = found
            .last()
            .map_or(0, |(number, _)| number.saturating_add(1));
        let mut slots = Vec::new();
        let mut generations: Vec<(u64, u64, Vec<u8>)> = Vec::new();
        // Any file's generation, this database's or another's.
        let mut newest = 0;
        for (_, path) in &found {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)?;
            let mut bytes = Vec::new();
            io::Read::read_to_end(&mut &file, &mut bytes)?;
            let header = read_header(&bytes);
            let generation = match &header {
                Some(header) => {
                    newest = newest.max(header.generation);
                    if header.database == database {
                        header.generation
                    } else {
                        0
                    }
                }
                None => 0,
            };
            if let Some(header) = header.filter(|_| generation > applied) {
                generations.push((generation, header.nonce, bytes));
            }
            slots.push(Slot {
                file,
                generation,
                // The store syncs its directory once it is open.
                name_synced: true,
            });
        }
        generations.sort_by_key(|(generation, _, _)| *generation);
        let mut replayed = Vec::new();
        let mut last = applied;
        for (generation, nonce, bytes) in &generations {
            read_records(bytes, *generation, *nonce, &mut replayed)?;
            last = *generation;
        }
        let journal = Journal {
            dir: dir.to_path_buf(),
            database,
            slots,
            next_name,
            current: None,
            nonce: 0,
            // Past every generation any file names, so no old record passes for a new one.
            generation: newest.max(applied) + 1,
            end: 0,
            applied,
        };
        Ok((journal, replayed, last))
    }

    /// The generation being written.
    #[cfg(test)]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Notes that the database holds every generation up to `generation` (durably).
    pub fn applied_through(&mut self, generation: u64) {
        self.applied = self.applied.max(generation);
    }

    /// Closes the generation being written and starts the next; returns the closed one.
    pub fn rotate(&mut self) -> u64 {
        let closed = self.generation;
        self.generation += 1;
        self.current = None;
        self.end = 0;
        closed
    }

    /// Appends `writes` to the generation being written (not synced: see
    /// [`Journal::sync`]). A write that fails leaves the end where it was: the next
    /// overwrites what it left.
    pub fn write(&mut self, writes: &[Committing]) -> io::Result<()> {
        if writes.is_empty() {
            return Ok(());
        }
        let slot = self.current_slot()?;
        let mut bytes = Vec::new();
        if self.end == 0 {
            let mut nonce = [0u8; 8];
            getrandom::fill(&mut nonce).map_err(io::Error::other)?;
            self.nonce = u64::from_le_bytes(nonce);
            bytes.extend_from_slice(MAGIC);
            bytes.extend_from_slice(&self.database.to_le_bytes());
            bytes.extend_from_slice(&self.generation.to_le_bytes());
            bytes.extend_from_slice(&nonce);
            let checksum = crc32fast::hash(&bytes);
            bytes.extend_from_slice(&checksum.to_le_bytes());
        }
        let mut payload = Vec::new();
        for write in writes {
            encode_write(&mut payload, write)?;
            if payload.len() >= RECORD_PAYLOAD_MAX {
                push_record(&mut bytes, self.generation, self.nonce, &payload)?;
                payload.clear();
            }
        }
        if !payload.is_empty() {
            push_record(&mut bytes, self.generation, self.nonce, &payload)?;
        }
        let file = &mut self.slots[slot];
        file.file.write_all_at(&bytes, self.end)?;
        file.generation = self.generation;
        self.end += bytes.len() as u64;
        Ok(())
    }

    /// Empties the files whose generation the database holds (at close: their space goes
    /// back to the disk; the next run's files grow again as they are written).
    pub fn empty_applied(&mut self) -> io::Result<()> {
        for (index, slot) in self.slots.iter_mut().enumerate() {
            if slot.generation <= self.applied {
                slot.file.set_len(0)?;
                slot.generation = 0;
                if self.current == Some(index) {
                    self.current = None;
                    self.end = 0;
                }
            }
        }
        Ok(())
    }

    /// Syncs what [`Journal::write`] wrote.
    pub fn sync(&self) -> io::Result<()> {
        match self.current {
            Some(slot) => self.slots[slot].file.sync_data(),
            None => Ok(()),
        }
    }

    /// The file this generation is written to: one whose generation the database holds, or a
    /// new one.
    fn current_slot(&mut self) -> io::Result<usize> {
        if let Some(slot) = self.current {
            return Ok(slot);
        }
        let reusable = self
            .slots
            .iter()
            .position(|slot| slot.generation <= self.applied);
        let slot = match reusable {
            Some(slot) => slot,
            None => {
                let file = self.new_file()?;
                self.slots.push(Slot {
                    file,
                    generation: 0,
                    name_synced: false,
                });
                self.slots.len() - 1
            }
        };
        if !self.slots[slot].name_synced {
            // The file's name must last as its records do (tried again at the next write if
            // this fails).
            File::open(&self.dir)?.sync_all()?;
            self.slots[slot].name_synced = true;
        }
        self.current = Some(slot);
        Ok(slot)
    }

    /// Makes a file under the next free name (one made by hand meanwhile is skipped).
    fn new_file(&mut self) -> io::Result<File> {
        loop {
            let path = self.dir.join(format!("{FILE_PREFIX}{}", self.next_name));
            self.next_name = self.next_name.saturating_add(1);
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && self.next_name < u64::MAX => {
                }
                opened => return opened,
            }
        }
    }
}

/// What a file's header says, if it can be read.
fn read_header(bytes: &[u8]) -> Option<Header> {
    let header = bytes.get(..HEADER_LEN)?;
    let (named, checksum) = header.split_at(HEADER_LEN - 4);
    if &named[..8] != MAGIC || crc32fast::hash(named).to_le_bytes() != checksum {
        return None;
    }
    let number = |at: usize| named[at..at + 8].try_into().ok().map(u64::from_le_bytes);
    Some(Header {
        database: number(8)?,
        generation: number(16)?,
        nonce: number(24)?,
    })
}

/// The writes of `generation`'s records in `bytes` (a file whose header names it and holds
/// `nonce`), to the first record that is torn, damaged, of another generation or of the
/// file's earlier use.
fn read_records(
    bytes: &[u8],
    generation: u64,
    nonce: u64,
    out: &mut Vec<Replayed>,
) -> io::Result<()> {
    let mut at = HEADER_LEN;
    loop {
        let Some(header) = bytes.get(at..at + RECORD_HEADER_LEN) else {
            return Ok(());
        };
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let mut named = [0u8; 8];
        named.copy_from_slice(&header[4..12]);
        let checksum = [header[12], header[13], header[14], header[15]];
        let Some(payload) = bytes.get(at + RECORD_HEADER_LEN..at + RECORD_HEADER_LEN + len) else {
            return Ok(());
        };
        if u64::from_le_bytes(named) != generation
            || record_checksum(nonce, &header[..12], payload) != checksum
        {
            return Ok(());
        }
        decode_writes(payload, out)?;
        at += RECORD_HEADER_LEN + len;
    }
}

/// A record's checksum: its file header's random number, its length and generation (`head`),
/// and its payload. One function for writing and reading, so the two cannot differ.
fn record_checksum(nonce: u64, head: &[u8], payload: &[u8]) -> [u8; 4] {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&nonce.to_le_bytes());
    hasher.update(head);
    hasher.update(payload);
    hasher.finalize().to_le_bytes()
}

fn push_record(bytes: &mut Vec<u8>, generation: u64, nonce: u64, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len()).map_err(|_| io::Error::other("record too long"))?;
    let start = bytes.len();
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&generation.to_le_bytes());
    let checksum = record_checksum(nonce, &bytes[start..], payload);
    bytes.extend_from_slice(&checksum);
    bytes.extend_from_slice(payload);
    Ok(())
}

/// `tree`, `key`, then `1` and the value or `0` for a deletion; each length as 4 bytes.
fn encode_write(payload: &mut Vec<u8>, write: &Committing) -> io::Result<()> {
    let field = |payload: &mut Vec<u8>, bytes: &[u8]| {
        let len = u32::try_from(bytes.len()).map_err(|_| io::Error::other("entry too long"))?;
        payload.extend_from_slice(&len.to_le_bytes());
        payload.extend_from_slice(bytes);
        Ok::<_, io::Error>(())
    };
    field(payload, write.tree.as_bytes())?;
    field(payload, &write.key)?;
    match &write.value {
        Some(value) => {
            payload.push(1);
            field(payload, value)?;
        }
        None => payload.push(0),
    }
    Ok(())
}

fn decode_writes(mut payload: &[u8], out: &mut Vec<Replayed>) -> io::Result<()> {
    let damaged = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a journal record passed its checksum but could not be read",
        )
    };
    fn field<'a>(payload: &mut &'a [u8]) -> Option<&'a [u8]> {
        let len = u32::from_le_bytes(payload.get(..4)?.try_into().ok()?) as usize;
        let bytes = payload.get(4..4 + len)?;
        *payload = &payload[4 + len..];
        Some(bytes)
    }
    while !payload.is_empty() {
        let tree = field(&mut payload).ok_or_else(damaged)?;
        let tree = String::from_utf8(tree.to_vec()).map_err(|_| damaged())?;
        let key = field(&mut payload).ok_or_else(damaged)?.to_vec();
        let (&tag, rest) = payload.split_first().ok_or_else(damaged)?;
        payload = rest;
        let value = match tag {
            1 => Some(field(&mut payload).ok_or_else(damaged)?.to_vec()),
            0 => None,
            _ => return Err(damaged()),
        };
        out.push((tree, key, value));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
