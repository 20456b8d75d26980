//! The disruption controller: every pass it builds the cluster's [`Input`] ([`input`]),
//! asks the pure decision ([`adze_scheduling::disruption::decide_all`]) for every disruption
//! that can run side by side within the budgets, waits the validation period, re-checks each
//! against the cluster as it is then ([`adze_scheduling::disruption::revalidate`], each on the
//! cluster as the ones before it will leave it) and starts a **command** for each:
//!
//! 1. marks the NodeClaims `Disrupting` (the message says what, why and the saving) and
//!    taints their nodes `adze.sh/disrupted:NoSchedule`, so nothing new lands there and the
//!    budgets count them from now on (done before the pass ends);
//! 2. for a replacement, creates the new NodeClaims (nominated for the pods that will move)
//!    and waits until they are Initialized; if they do not come up the old nodes are
//!    un-marked and nothing is drained;
//! 3. deletes the old NodeClaims: [`crate::termination`] drains and terminates them.
//!
//! Steps 2 and 3 run in the background, so the next pass decides again while replacements
//! boot: a drift rollout keeps as many nodes in flight as the budgets allow, in waves, instead
//! of one node per replacement boot.
//!
//! Every pass also keeps each NodeClaim's `Drifted` and `Consolidatable` conditions (and its
//! drift hash stamps) current ([`status_conditions`]), and first of all carries out
//! **expiry**, which is forceful: a NodeClaim past its `expireAfter` is marked `Disrupting`
//! (reason `Expired`) and deleted at once, whatever the budgets, do-not-disrupt annotations
//! or pending pods say; the provisioner launches capacity for its pods as they are displaced.
//!
//! Nothing is decided while pods the provisioner can place wait for capacity (pods no node
//! and no NodePool could take do not hold anything up). Consolidation also waits for every
//! NodeClaim launch and every command to finish: it weighs the whole cluster, so the picture
//! must settle first. Drift and emptiness do not wait for the commands' own replacements.
//! Passes come a poll period apart while there is nothing to do; after a pass that started
//! commands the next comes within a second, and while the cluster settles (their pods
//! pending, launches, commands) the wait doubles from a second up to the poll period
//! ([`next_pass_in`]): the next wave starts when the last one's pods have landed.
//! With `dry_run` decisions are logged and recorded as events but not carried out. Marks
//! left by a process that stopped before step 3 are undone at the next pass; the decision is
//! simply taken again.
//!
//! The pure parts ([`input`], [`drift`], [`pdb`]) are always built: `simulate`'s disruption
//! planner ([`crate::simulate::disruption`]) builds its [`Input`](adze_scheduling::disruption::Input)
//! with the same [`input::build`], so the plan it prints is the one this controller would take.

pub mod deletion_cost;
pub mod drift;
pub mod input;
pub mod pdb;
pub mod repair;
pub mod vpa;
#[cfg(feature = "controller")]
pub mod vpa_reader;

#[cfg(feature = "controller")]
mod controller;
#[cfg(feature = "controller")]
pub use controller::*;
