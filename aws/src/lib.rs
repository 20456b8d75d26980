//! Adze's AWS cloud provider: EC2NodeClass resolution, instance types and prices from EC2,
//! on-demand prices from the Price List API, instance profiles for node roles,
//! launches through CreateFleet with capacity-error fallback, and the SQS interruption queue.
//! Proven against moto (see `ci/moto.sh`), with [`fault_proxy`] adding the capacity errors and
//! allocation strategy moto lacks.

pub mod clients;
pub mod cluster;
pub mod error;
pub mod fault_proxy;
pub mod instance_profile;
pub mod instance_types;
pub mod interruption;
pub mod nodeclass;
pub mod pricing;
pub mod provider;
pub mod runtime;
pub mod selection;
pub mod status_checks;
pub mod sweep;
pub mod templates;
pub mod userdata;
pub mod zonal_shift;

pub use clients::Clients;
pub use error::AwsError;
pub use provider::{AwsProvider, KubeNodeClasses, NodeClasses, Settings, StaticNodeClasses};
