//! Adze API types.
pub use adze_scheduling::labels;
