//! Adze provisioner.
