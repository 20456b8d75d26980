//! Adze's provisioner. Today it holds [`simulate`], the placement run on a scenario file;
//! the controllers that watch a cluster and launch capacity come next.

pub mod simulate;
