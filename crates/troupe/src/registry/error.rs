//! Why a registration failed.

use crate::actor::ActorId;
use std::fmt;

/// Why a registration failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// The name is held by another live actor.
    NameTaken {
        /// The name asked for.
        name: String,
        /// The actor holding it.
        holder: ActorId,
    },
    /// The actor has already stopped; it was not registered.
    ActorStopped(ActorId),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::NameTaken { name, holder } => {
                write!(
                    f,
                    "the name {name:?} is already registered by actor {holder}"
                )
            }
            RegisterError::ActorStopped(id) => {
                write!(f, "actor {id} has stopped and cannot be registered")
            }
        }
    }
}

impl std::error::Error for RegisterError {}
