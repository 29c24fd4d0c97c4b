//! What the results writer is handed: the message type of its channel, apart from the writer
//! itself, so its inbox ([`super::queue`]) and those who send to it need nothing of the writer.

use crate::run::{HandleOutcome, TriggerOutcome};
use tokio::sync::oneshot;

/// Something to record.
#[derive(Debug)]
pub enum ResultMsg {
    /// A run was sent (or could not be).
    Trigger(TriggerOutcome),
    /// Run results (a callback batch, a kill, the lost sweep); the sender learns when they are
    /// committed.
    Handle(Vec<HandleOutcome>, Option<oneshot::Sender<Result<(), String>>>),
}

impl ResultMsg {
    /// How many outcomes this message carries.
    pub fn outcomes(&self) -> usize {
        match self {
            ResultMsg::Trigger(_) => 1,
            ResultMsg::Handle(h, _) => h.len(),
        }
    }
}
