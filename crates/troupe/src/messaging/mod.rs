//! Messaging above single actors (the toolkit SObjectizer users know): the
//! [`Recipient`](crate::Recipient) abstraction every target implements,
//! publish/subscribe [`channel`]s, message chains for plain threads
//! ([`mchain`]), message [`limits`], and message [`timer`]s.
//!
//! Layer: above the system; uses only the actor core's public API and the
//! engine's timer thread.

pub mod channel;
pub mod limits;
pub mod mchain;
pub mod recipient;
pub mod timer;
