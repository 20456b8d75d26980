//! Instance-type catalogs: the embedded EC2 facts turned into schedulable instance types.
pub mod ec2_data;
