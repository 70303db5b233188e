//! The one trait a platform implements, and what it hands in. The runtime calls a bridge only
//! through [`Bridge`]; a bridge hands events in through an [`EventSender`], a bounded channel
//! the runtime owns (a full channel makes the bridge wait: back-pressure, nothing dropped).

use crate::card::{CardOutcome, CardRef, CardView};
use crate::error::BridgeError;
use crate::limits::Limits;
use crate::message::{ChatRef, Inbound, Platform, RemoteFile, UserRef};
use crate::press::{Press, PressHandle};
use std::future::Future;
use std::pin::Pin;

/// Where a fetched file's bytes go.
pub type FetchSink = dyn tokio::io::AsyncWrite + Unpin + Send;

/// A boxed future, so bridges can be held as `dyn Bridge`.
pub type BridgeFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, BridgeError>> + Send + 'a>>;

/// Where a bridge hands events in: the runtime's bounded channel, each event tagged with the
/// platform of the bridge that sent it (so a bridge cannot speak for another platform, whose
/// admins its presses would be judged by).
#[derive(Clone, Debug)]
pub struct EventSender {
    platform: Platform,
    channel: tokio::sync::mpsc::Sender<(Platform, BridgeEvent)>,
}

/// The runtime is gone: stop listening.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuntimeGone;

impl EventSender {
    /// A sender for the bridge of `platform` into `channel`.
    #[must_use]
    pub fn new(
        platform: Platform,
        channel: tokio::sync::mpsc::Sender<(Platform, BridgeEvent)>,
    ) -> Self {
        EventSender { platform, channel }
    }

    /// Hands `event` in, waiting while the channel is full (nothing is dropped).
    pub async fn send(&self, event: BridgeEvent) -> Result<(), RuntimeGone> {
        self.channel
            .send((self.platform, event))
            .await
            .map_err(|_| RuntimeGone)
    }
}

/// A command as the runtime registers it with a platform (Telegram's menu, Discord's slash
/// commands).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// Only the bridge's admins may use it (the runtime checks; a platform may also hide it).
    pub admin_only: bool,
    /// What its argument is, for platforms that ask for arguments in a form (Discord's slash
    /// command options); `None` when it takes none.
    pub args: Option<&'static str>,
}

/// A command a platform delivers apart from messages (a Discord slash command): answered
/// through its handle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandInvocation {
    pub chat: ChatRef,
    pub sender: UserRef,
    pub roles: Vec<i64>,
    pub name: String,
    pub args: String,
    pub handle: PressHandle,
}

/// What a bridge hands in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BridgeEvent {
    /// A message (text commands such as `/stop` included, as text).
    Message(Inbound),
    /// A button press.
    Press(Press),
    /// A command delivered apart from messages.
    Command(CommandInvocation),
}

/// A chat platform as the runtime sees it. Sends that must arrive (answers, notices, cards and
/// their edits, press answers) wait out rate limits and retry transient failures inside the
/// bridge; droppable ones (typing, progress) report them at once.
pub trait Bridge: Send + Sync + 'static {
    fn platform(&self) -> Platform;

    fn limits(&self) -> Limits;

    /// Whether the platform connection is up now (the service's `/healthz`): the last poll
    /// succeeded, or every gateway connection this process runs is established.
    fn connected(&self) -> bool;

    /// Runs until the platform connection ends, handing events to `events` (the runtime stops
    /// it by dropping the future). Every press is handed in, even one that carries nothing.
    fn listen(&self, events: EventSender) -> BridgeFuture<'_, ()>;

    /// A final answer, from the model's Markdown: rendered, and split at the platform's limit.
    fn send_answer<'a>(&'a self, chat: &'a ChatRef, markdown: &'a str) -> BridgeFuture<'a, ()>;

    /// A short notice as plain text.
    fn send_notice<'a>(&'a self, chat: &'a ChatRef, text: &'a str) -> BridgeFuture<'a, CardRef>;

    /// Posts a card with its buttons (and, when its details were cut to fit, the whole text as
    /// a file beside it).
    fn post_card<'a>(&'a self, chat: &'a ChatRef, card: &'a CardView) -> BridgeFuture<'a, CardRef>;

    /// Shows how a card ended, its buttons removed.
    fn settle_card<'a>(
        &'a self,
        at: &'a CardRef,
        card: &'a CardView,
        outcome: &'a CardOutcome,
    ) -> BridgeFuture<'a, ()>;

    /// Answers a press (or a command invocation): privately to the presser when `private`.
    fn answer_press<'a>(
        &'a self,
        press: &'a PressHandle,
        text: &'a str,
        private: bool,
    ) -> BridgeFuture<'a, ()>;

    /// "typing…" (droppable).
    fn typing<'a>(&'a self, chat: &'a ChatRef) -> BridgeFuture<'a, ()>;

    /// Posts the progress message, or edits it where `at` says (droppable).
    fn progress<'a>(
        &'a self,
        chat: &'a ChatRef,
        at: Option<&'a CardRef>,
        text: &'a str,
    ) -> BridgeFuture<'a, CardRef>;

    /// Fetches a file a message carried into `sink`, refusing more than `cap` bytes (checked
    /// before and while downloading); returns the bytes written. The runtime opens the sink
    /// (beneath the session's workspace, never through a link) and removes what a failed fetch
    /// left; a bridge never names a path.
    fn fetch<'a>(
        &'a self,
        file: &'a RemoteFile,
        sink: &'a mut FetchSink,
        cap: u64,
    ) -> BridgeFuture<'a, u64>;

    /// Opens the thread an admitted message starts ([`Inbound::starts_thread`]), telling its
    /// readers how to continue there. A platform without such threads never sets the flag and
    /// answers `Ok`.
    fn open_thread<'a>(&'a self, message: &'a Inbound) -> BridgeFuture<'a, ()>;

    /// Registers the commands with the platform's menu.
    fn register_commands<'a>(&'a self, commands: &'a [CommandSpec]) -> BridgeFuture<'a, ()>;
}
