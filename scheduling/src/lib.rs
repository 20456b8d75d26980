pub mod labels;
pub mod catalog;
