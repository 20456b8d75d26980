//! Adze scheduler extender.
