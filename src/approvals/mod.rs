//! Pending approvals for the chat bridges: each card's buttons carry a versioned, random,
//! single-use token that only locates its pending record (it authorizes nothing: the presser is
//! checked on every press). Records live in the store, so buttons keep working after a restart;
//! the first valid press wins atomically; a record past its deadline resolves as a timeout.

mod bulk;
mod button;
pub mod card;
mod index;
mod pending;
mod token;

pub use bulk::{BulkApproval, BulkApprovals, Taken};
pub use button::{BulkChoice, ButtonData, MAX_BUTTON_DATA, question_key};
pub use pending::{
    ApprovalChoice, MAX_OPTIONS, PendingApproval, PendingApprovals, PendingState, PressOutcome,
};
pub use token::{ApprovalToken, TOKEN_VERSION};
