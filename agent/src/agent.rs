//! The agent's loop: poll IMDS, decide, act on the node, drain, report readiness. Errors never
//! end the loop: IMDS trouble backs off and turns readiness false; apiserver trouble is retried
//! next tick. State that must survive a restart lives on the Node (see [`crate::node`]).

use std::time::{Duration, Instant};

use chrono::Utc;
use tokio::sync::watch;

use crate::decide::{self, Action, Memory, Policy};
use crate::drain::Drainer;
use crate::health::Checker;
use crate::imds::{Imds, ImdsError};
use crate::node::{self, NodeOps};
use crate::notice::{
    MAINTENANCE_PATH, MaintenanceEvent, Observation, REBALANCE_PATH, RebalanceNotice, SPOT_PATH,
    SpotNotice,
};

#[derive(Debug, Clone)]
pub struct Timing {
    pub poll: Duration,
    /// Longest wait between polls while IMDS keeps failing.
    pub max_backoff: Duration,
    /// How often the readiness condition is posted even when nothing changed.
    pub heartbeat: Duration,
}

pub struct Agent {
    pub imds: Imds,
    pub ops: NodeOps,
    pub drainer: Drainer,
    pub checker: Checker,
    pub policy: Policy,
    pub timing: Timing,
    /// What `/healthz` and `/metrics` report ([`crate::status`]).
    pub stats: std::sync::Arc<crate::status::Stats>,
}

/// Polls the three notice endpoints. Any failure makes the whole poll a failure: acting on a
/// partial picture could, say, uncordon a node whose spot notice was not read.
pub async fn poll(imds: &Imds) -> Result<Observation, ImdsError> {
    let (spot, rebalance, maintenance) = tokio::join!(
        imds.get(SPOT_PATH),
        imds.get(REBALANCE_PATH),
        imds.get(MAINTENANCE_PATH)
    );
    let parse_warn = |what: &str, e: &dyn std::fmt::Display| {
        tracing::warn!(what, error = %e, "ignoring unparseable IMDS answer");
    };
    let mut obs = Observation::default();
    if let Some(body) = spot? {
        match SpotNotice::parse(&body) {
            Ok(n) => obs.spot = Some(n),
            Err(e) => parse_warn("spot", &e),
        }
    }
    if let Some(body) = rebalance? {
        match RebalanceNotice::parse(&body) {
            Ok(n) => obs.rebalance = Some(n),
            Err(e) => parse_warn("rebalance", &e),
        }
    }
    if let Some(body) = maintenance?
        && !body.trim().is_empty()
    {
        match MaintenanceEvent::parse_list(&body) {
            Ok(list) => obs.maintenance = list,
            Err(e) => parse_warn("maintenance", &e),
        }
    }
    Ok(obs)
}

fn interrupted_message(rec: &decide::DrainRecord) -> String {
    format!(
        "{} notice: instance goes away at {}",
        rec.reason,
        node::rfc3339(rec.deadline)
    )
}

/// The wait before the next poll after `failures` consecutive failed polls.
pub fn backoff(timing: &Timing, failures: u32) -> Duration {
    if failures == 0 {
        return timing.poll;
    }
    timing
        .poll
        .saturating_mul(1 << failures.min(6))
        .min(timing.max_backoff)
}

impl Agent {
    async fn load_memory(&self) -> Memory {
        let mut wait = Duration::from_millis(500);
        loop {
            match self.ops.get().await {
                Ok(n) => return node::memory_of(&n),
                Err(e) => {
                    tracing::warn!(node = %self.ops.node_name, error = %e, "cannot read own node; retrying");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(10));
                }
            }
        }
    }

    async fn act(&mut self, action: Action, mem: &mut Memory) -> kube::Result<()> {
        match action {
            Action::BeginDrain(rec) => {
                tracing::info!(node = %self.ops.node_name, event = %rec.event, reason = %rec.reason,
                    deadline = %node::rfc3339(rec.deadline), "notice: tainting, cordoning and draining");
                self.ops.begin_drain(&rec).await?;
                if rec.interrupted {
                    self.ops
                        .mark_interrupted(&rec.reason, &interrupted_message(&rec))
                        .await?;
                }
                mem.drain = Some(rec);
            }
            Action::TaintPreferNoSchedule { event } => {
                self.ops
                    .set_taint(node::TAINT_REBALANCE, Some("PreferNoSchedule"))
                    .await?;
                mem.handled.insert(event);
                self.ops.remember(&mem.handled).await?;
            }
            Action::AskReplacement { event } => {
                self.ops
                    .mark_interrupted(
                        "RebalanceRecommendation",
                        "rebalance recommendation: replacement requested",
                    )
                    .await?;
                mem.handled.insert(event);
                self.ops.remember(&mem.handled).await?;
            }
            Action::EndDrain { event } => {
                tracing::info!(node = %self.ops.node_name, event = %event, "event canceled or completed: uncordoning");
                self.ops.end_drain(&event, &mem.handled).await?;
                mem.handled.insert(event);
                mem.drain = None;
            }
        }
        Ok(())
    }

    /// Runs until `shutdown` turns true. Returns the number of polls made (for tests).
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> u64 {
        let mut mem = self.load_memory().await;
        if let Some(d) = mem.drain.clone() {
            tracing::info!(node = %self.ops.node_name, event = %d.event, "resuming drain recorded on the node");
            // The previous run may have stopped between the taint and the NodeClaim condition.
            if d.interrupted {
                let message = interrupted_message(&d);
                if let Err(e) = self.ops.mark_interrupted(&d.reason, &message).await {
                    tracing::warn!(error = %e, "could not mark the NodeClaim Interrupted; retried on the next notice");
                }
            }
        }
        let mut failures = 0u32;
        let mut polls = 0u64;
        let mut last_ready: Option<bool> = None;
        // None: never posted, so due at once (subtracting the heartbeat from now could
        // underflow for a long --heartbeat).
        let mut last_heartbeat: Option<Instant> = None;
        let mut drained_at: Option<Instant> = None;
        loop {
            if *shutdown.borrow() {
                break;
            }
            polls += 1;
            self.stats.turn();
            self.stats.polls.inc();
            match poll(&self.imds).await {
                Ok(obs) => {
                    failures = 0;
                    for action in decide::decide(&obs, &mem, &self.policy, Utc::now()) {
                        self.stats.actions.inc();
                        if let Err(e) = self.act(action.clone(), &mut mem).await {
                            self.stats.action_failures.inc();
                            tracing::warn!(node = %self.ops.node_name, action = ?action, error = %e, "action failed; retried next poll");
                        }
                    }
                }
                Err(e) => {
                    self.stats.poll_failures.inc();
                    failures = failures.saturating_add(1);
                    tracing::warn!(error = %e, failures, "IMDS poll failed");
                }
            }
            // One failed poll is noise; several in a row make the node not ready.
            let imds_ok = failures < 3;
            if let Some(rec) = mem.drain.clone() {
                // Once drained, check now and then for pods that arrive anyway.
                let due = drained_at.is_none_or(|t| t.elapsed() >= Duration::from_secs(10));
                if due {
                    self.stats.drain_rounds.inc();
                    match self.drainer.round(Utc::now(), rec.deadline).await {
                        Ok(r) if r.drained => {
                            if drained_at.is_none() {
                                tracing::info!(node = %self.ops.node_name, event = %rec.event, "node drained");
                                if mem.handled.insert(rec.event.clone())
                                    && let Err(e) = self.ops.remember(&mem.handled).await
                                {
                                    tracing::warn!(error = %e, "could not record handled event");
                                }
                            }
                            drained_at = Some(Instant::now());
                        }
                        Ok(r) => {
                            drained_at = None;
                            tracing::debug!(node = %self.ops.node_name, remaining = r.remaining, evicted = r.evicted,
                                blocked = r.blocked, "drain round");
                        }
                        Err(e) => tracing::warn!(error = %e, "drain round failed; retrying"),
                    }
                }
            } else {
                drained_at = None;
            }
            let facts = self.checker.gather(imds_ok).await;
            let (ready, reason, message) = crate::health::verdict(&facts, self.checker.config());
            self.stats.ready.set(i64::from(ready));
            let heartbeat_due = last_heartbeat.is_none_or(|t| t.elapsed() >= self.timing.heartbeat);
            if last_ready != Some(ready) || heartbeat_due {
                match self.ops.report_ready(ready, reason, &message).await {
                    Ok(()) => {
                        if last_ready != Some(ready) {
                            tracing::info!(node = %self.ops.node_name, ready, %message, "readiness");
                        }
                        last_ready = Some(ready);
                        last_heartbeat = Some(Instant::now());
                    }
                    Err(e) => tracing::warn!(error = %e, "readiness report failed"),
                }
            }
            let wait = backoff(&self.timing, failures);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = shutdown.changed() => {}
            }
        }
        tracing::info!(node = %self.ops.node_name, "agent stopping; drain state stays on the node");
        polls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_from_the_poll_interval_and_is_capped() {
        let t = Timing {
            poll: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            heartbeat: Duration::from_secs(10),
        };
        assert_eq!(backoff(&t, 0), Duration::from_secs(1));
        assert_eq!(backoff(&t, 1), Duration::from_secs(2));
        assert_eq!(backoff(&t, 2), Duration::from_secs(4));
        assert_eq!(backoff(&t, 30), Duration::from_secs(5));
    }
}
