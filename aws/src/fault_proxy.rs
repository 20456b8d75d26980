//! A small HTTP proxy in front of moto that adds what moto lacks for launches: capacity errors
//! and an allocation strategy. For `CreateFleet` it orders the overrides by price (the embedded
//! catalog's list price, or its spot fraction), answers every override in a failing pool
//! (instance type × zone × capacity type) with a fleet `Errors` entry, and forwards the request
//! to moto with only one healthy override, so moto launches exactly that pool. Every other
//! call passes through unchanged. It can also play the Price List API (`GetProducts`), which
//! moto lacks, from a table the test sets (refusing it without one). Test support, not
//! production code.
//!
//! Moto is kinder than EC2; [`Unkind`] makes the proxy behave as EC2 documents it does:
//! * **allocation**: price-capacity-optimized (spot) picks pools by spare capacity first, and
//!   any strategy moves off the cheapest pool when it runs short, so the fleet may launch any
//!   of the overrides it was given ([`Allocation::NotCheapest`] always picks another one);
//! * **eventual consistency**: a new instance is missing from DescribeInstances (and its tag
//!   filters) for a while; naming it by id answers `InvalidInstanceID.NotFound`;
//! * **throttling**: EC2 calls draw from token buckets (mutating and describe calls apart)
//!   and an empty bucket answers `RequestLimitExceeded` (HTTP 503);
//! * **refusals**: launches of a type can be refused with any EC2 code (UnauthorizedOperation,
//!   VcpuLimitExceeded, InvalidAMIID.NotFound, ...), as fleet `Errors` entries;
//! * **idempotency**: a repeated `ClientToken` gets the first call's answer, or
//!   `IdempotentParameterMismatch` when the request differs (as EC2 does);
//! * **status checks**: moto reports every running instance's checks `ok`; an instance can be
//!   made to fail its instance or system reachability check in DescribeInstanceStatus
//!   ([`FaultProxy::impair`]).

use adze_cloud::sync::MutexExt;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adze_scheduling::catalog::ec2_data;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

type Pool = (String, String, String);

/// Which healthy override a fleet launches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Allocation {
    /// The cheapest (lowest-price with plenty of capacity everywhere).
    #[default]
    Cheapest,
    /// Any but the cheapest when there is another (rotating), as price-capacity-optimized or
    /// a short pool makes EC2 do.
    NotCheapest,
}

/// EC2 behaviour moto does not have; the default is moto's own kindness.
#[derive(Debug, Clone, Default)]
pub struct Unkind {
    pub allocation: Allocation,
    /// How long a new instance stays invisible to DescribeInstances.
    pub describe_lag: Duration,
    /// Token buckets for EC2 calls: (burst, refill per second).
    pub throttle: Option<(f64, f64)>,
}

#[derive(Debug, Clone)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

#[derive(Default)]
struct State {
    unkind: Unkind,
    /// Instance id → when DescribeInstances starts showing it.
    hidden_until: BTreeMap<String, Instant>,
    /// DescribeInstances answers from which a lagging instance was left out.
    lagged_answers: usize,
    /// ClientToken → (the request without its token, the answer).
    tokens: BTreeMap<String, (String, Vec<u8>)>,
    /// Requests answered from a ClientToken's first answer.
    replayed: usize,
    buckets: BTreeMap<&'static str, Bucket>,
    throttled: usize,
    /// Instance type (or `*`) → the code its launches are refused with.
    refusals: BTreeMap<String, String>,
    faults: BTreeSet<Pool>,
    subnet_zones: BTreeMap<String, String>,
    /// Pools moto was asked to launch, in order.
    launched: Vec<Pool>,
    fleet_calls: usize,
    /// On-demand Linux prices served as the Price List API; None refuses GetProducts.
    price_list: Option<BTreeMap<String, f64>>,
    /// On-demand Windows prices, served when a request filters `operatingSystem: Windows`
    /// (none until set: an empty answer).
    windows_price_list: BTreeMap<String, f64>,
    /// GetProducts pages served.
    price_pages: usize,
    /// Requests received, by action (what the sweep's tests and benchmark count).
    calls: BTreeMap<String, usize>,
    /// Action → the EC2 error code every request of it is refused with (HTTP 403).
    refused_actions: BTreeMap<String, String>,
    /// Instance id → (`instanceStatus` or `systemStatus`, impairedSince) DescribeInstanceStatus
    /// reports failing.
    impaired: BTreeMap<String, Vec<(String, String)>>,
}

#[derive(Clone)]
pub struct FaultProxy {
    pub addr: SocketAddr,
    upstream: String,
    state: Arc<Mutex<State>>,
}

impl FaultProxy {
    /// Listens on 127.0.0.1 (a free port) and forwards to `upstream` ("http://host:port").
    pub async fn start(upstream: &str) -> std::io::Result<FaultProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let proxy = FaultProxy {
            addr: listener.local_addr()?,
            upstream: upstream
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string(),
            state: Arc::default(),
        };
        let p = proxy.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let p = p.clone();
                tokio::spawn(async move {
                    if let Err(e) = p.serve(conn).await {
                        tracing::debug!(error = %e, "fault proxy connection ended");
                    }
                });
            }
        });
        Ok(proxy)
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Launches into this pool fail with `InsufficientInstanceCapacity` from now on.
    pub fn fail(&self, instance_type: &str, zone: &str, capacity_type: &str) {
        self.state.lock_or_recover().faults.insert((
            instance_type.into(),
            zone.into(),
            capacity_type.into(),
        ));
    }

    /// From now on answers `GetProducts` with these on-demand prices (one product per type).
    pub fn serve_prices(&self, prices: BTreeMap<String, f64>) {
        self.state.lock_or_recover().price_list = Some(prices);
    }

    /// From now on answers `GetProducts` for Windows with these prices.
    pub fn serve_windows_prices(&self, prices: BTreeMap<String, f64>) {
        self.state.lock_or_recover().windows_price_list = prices;
    }

    /// How many GetProducts pages were answered.
    pub fn price_pages(&self) -> usize {
        self.state.lock_or_recover().price_pages
    }

    /// From now on behaves as `unkind` says.
    pub fn set_unkind(&self, unkind: Unkind) {
        self.state.lock_or_recover().unkind = unkind;
    }

    /// Launches of `instance_type` (`*`: any) are refused with EC2 error `code` from now on.
    pub fn refuse(&self, instance_type: &str, code: &str) {
        self.state
            .lock_or_recover()
            .refusals
            .insert(instance_type.into(), code.into());
    }

    /// Every `action` request (any EC2 action: `DescribeInstances`, ...) is refused with EC2
    /// error `code` from now on (`UnauthorizedOperation`: not retried by the SDK).
    pub fn refuse_action(&self, action: &str, code: &str) {
        self.state
            .lock_or_recover()
            .refused_actions
            .insert(action.into(), code.into());
    }

    /// From now on DescribeInstanceStatus reports `instance_id`'s `check` (`instanceStatus` or
    /// `systemStatus`) impaired, its reachability failed since `since` (RFC 3339), as EC2
    /// reports a failing status check.
    pub fn impair(&self, instance_id: &str, check: &str, since: &str) {
        assert!(
            ["instanceStatus", "systemStatus"].contains(&check),
            "impair: {check:?} is not instanceStatus or systemStatus"
        );
        self.state
            .lock_or_recover()
            .impaired
            .entry(instance_id.into())
            .or_default()
            .push((check.into(), since.into()));
    }

    /// How many calls were throttled.
    pub fn throttled(&self) -> usize {
        self.state.lock_or_recover().throttled
    }

    /// How many DescribeInstances answers left out an instance that was still lagging.
    pub fn lagged_answers(&self) -> usize {
        self.state.lock_or_recover().lagged_answers
    }

    /// How many CreateFleet calls were answered from an earlier call with the same ClientToken.
    pub fn replayed(&self) -> usize {
        self.state.lock_or_recover().replayed
    }

    pub fn launched(&self) -> Vec<Pool> {
        self.state.lock_or_recover().launched.clone()
    }

    pub fn fleet_calls(&self) -> usize {
        self.state.lock_or_recover().fleet_calls
    }

    /// How many requests of `action` (`DescribeInstances`, ...) arrived, throttled ones included.
    pub fn calls(&self, action: &str) -> usize {
        self.state
            .lock_or_recover()
            .calls
            .get(action)
            .copied()
            .unwrap_or(0)
    }

    async fn serve(&self, conn: TcpStream) -> std::io::Result<()> {
        let mut conn = BufReader::new(conn);
        loop {
            let Some(req) = read_request(&mut conn).await? else {
                return Ok(());
            };
            let form = form_decode(&req.body);
            let price_list = req
                .head
                .to_ascii_lowercase()
                .contains("x-amz-target: awspricelistservice.getproducts");
            let action = form
                .iter()
                .find(|(k, _)| k == "Action")
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| {
                    req.head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .starts_with("x-amz-target:")
                                .then(|| l[13..].trim().to_string())
                        })
                        .unwrap_or_default()
                });
            *self
                .state
                .lock_or_recover()
                .calls
                .entry(action.clone())
                .or_default() += 1;
            let trace = std::env::var_os("ADZE_FAULT_PROXY_TRACE").is_some();
            let started = std::time::Instant::now();
            if trace {
                eprintln!("fault proxy: -> {action}");
            }
            let ec2 = form
                .iter()
                .any(|(k, v)| k == "Version" && v == "2016-11-15");
            let refused = (self.state.lock_or_recover())
                .refused_actions
                .get(&action)
                .cloned();
            let response = if price_list {
                self.get_products(&req.body)
            } else if let Some(code) = refused.filter(|_| ec2) {
                ec2_error(403, &code, &format!("fault proxy: {action} refused"))
            } else if ec2 && !self.take_token(&action) {
                ec2_error(503, "RequestLimitExceeded", "Request limit exceeded.")
            } else if ec2 && action == "CreateFleet" {
                self.create_fleet(&req, form).await?
            } else if ec2 && action == "DescribeInstances" {
                self.describe_instances(&req, &form).await?
            } else if ec2 && action == "DescribeInstanceStatus" {
                self.describe_instance_status(&req).await?
            } else {
                forward(&self.upstream, &req, &req.body).await?
            };
            if trace {
                eprintln!(
                    "fault proxy: <- {action} {} in {} ms",
                    String::from_utf8_lossy(&response[..response.len().min(12)]),
                    started.elapsed().as_millis()
                );
            }
            conn.get_mut().write_all(&response).await?;
        }
    }

    /// Draws a token for an EC2 call; false when its bucket is empty (throttled).
    fn take_token(&self, action: &str) -> bool {
        let mut st = self.state.lock_or_recover();
        let Some((burst, rate)) = st.unkind.throttle else {
            return true;
        };
        let kind = if action.starts_with("Describe") {
            "describe"
        } else {
            "mutating"
        };
        let now = Instant::now();
        let b = st.buckets.entry(kind).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            st.throttled += 1;
            eprintln!("fault proxy: throttled {action} (RequestLimitExceeded)");
            false
        }
    }

    /// Ids still lagging at `now`.
    fn lagging(&self, now: Instant) -> BTreeSet<String> {
        let mut st = self.state.lock_or_recover();
        st.hidden_until.retain(|_, until| *until > now);
        st.hidden_until.keys().cloned().collect()
    }

    async fn describe_instances(
        &self,
        req: &Request,
        form: &[(String, String)],
    ) -> std::io::Result<Vec<u8>> {
        let hidden = self.lagging(Instant::now());
        if hidden.is_empty() {
            return forward(&self.upstream, req, &req.body).await;
        }
        if let Some((_, id)) = form
            .iter()
            .find(|(k, v)| k.starts_with("InstanceId.") && hidden.contains(v))
        {
            self.state.lock_or_recover().lagged_answers += 1;
            eprintln!("fault proxy: lagging DescribeInstances: {id} not found yet");
            return Ok(ec2_error(
                400,
                "InvalidInstanceID.NotFound",
                &format!("The instance ID '{id}' does not exist"),
            ));
        }
        let resp = forward(&self.upstream, req, &req.body).await?;
        let (head, body) = split_response(&resp);
        let text = String::from_utf8_lossy(body);
        let (kept, dropped) = drop_reservations(&text, &hidden);
        if dropped == 0 {
            return Ok(resp);
        }
        self.state.lock_or_recover().lagged_answers += 1;
        eprintln!("fault proxy: lagging DescribeInstances: {dropped} new instance(s) left out");
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(200);
        Ok(http_response(status, "text/xml", kept.as_bytes()))
    }

    /// moto's answer with the impaired instances' checks rewritten to fail.
    async fn describe_instance_status(&self, req: &Request) -> std::io::Result<Vec<u8>> {
        let impaired = self.state.lock_or_recover().impaired.clone();
        let resp = forward(&self.upstream, req, &req.body).await?;
        if impaired.is_empty() {
            return Ok(resp);
        }
        let (head, body) = split_response(&resp);
        let (text, rewritten) = impair_statuses(&String::from_utf8_lossy(body), &impaired);
        if rewritten == 0 {
            return Ok(resp);
        }
        eprintln!("fault proxy: DescribeInstanceStatus: {rewritten} instance(s) reported impaired");
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(200);
        Ok(http_response(status, "text/xml", text.as_bytes()))
    }

    async fn zone_of(&self, subnet: &str) -> std::io::Result<String> {
        if let Some(z) = self.state.lock_or_recover().subnet_zones.get(subnet) {
            return Ok(z.clone());
        }
        let body = format!("Action=DescribeSubnets&Version=2016-11-15&SubnetId.1={subnet}");
        let req = Request {
            head: format!(
                "POST / HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nAuthorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=x\r\n",
                self.upstream
            ),
            body: body.into_bytes(),
        };
        let resp = forward(&self.upstream, &req, &req.body).await?;
        let text = String::from_utf8_lossy(&resp);
        let zone = between(&text, "<availabilityZone>", "</availabilityZone>")
            .unwrap_or_default()
            .to_string();
        self.state
            .lock_or_recover()
            .subnet_zones
            .insert(subnet.into(), zone.clone());
        Ok(zone)
    }

    /// One page of `GetProducts`: products in type order, `MaxResults` at a time (at most 100,
    /// as AWS), `NextToken` being the index of the next product.
    fn get_products(&self, body: &[u8]) -> Vec<u8> {
        let req: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let filter = |field: &str| {
            req["Filters"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|f| f["Field"] == field)
                .and_then(|f| f["Value"].as_str())
                .map(str::to_string)
        };
        let region = filter("regionCode").unwrap_or_else(|| "us-east-1".into());
        let os = filter("operatingSystem").unwrap_or_else(|| crate::pricing::LINUX.into());
        let start: usize = req["NextToken"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let size = req["MaxResults"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
        let mut state = self.state.lock_or_recover();
        let Some(prices) = state.price_list.clone() else {
            // As an account without access would: refused at once, not retried. (Moto has no
            // Price List API, and forwarding there sometimes never answers.)
            return http_response(
                400,
                "application/x-amz-json-1.1",
                br#"{"__type":"AccessDeniedException","message":"the fault proxy serves no price list"}"#,
            );
        };
        state.price_pages += 1;
        let prices = if os == crate::pricing::WINDOWS {
            state.windows_price_list.clone()
        } else {
            prices
        };
        let page: Vec<String> = prices
            .iter()
            .skip(start)
            .take(size)
            .map(|(t, p)| crate::pricing::product_document(t, &region, &os, &format!("{p:.10}")))
            .collect();
        let mut out = serde_json::json!({"FormatVersion": "aws_v1", "PriceList": page});
        if start + size < prices.len() {
            out["NextToken"] = (start + size).to_string().into();
        }
        http_response(
            200,
            "application/x-amz-json-1.1",
            out.to_string().as_bytes(),
        )
    }

    async fn create_fleet(
        &self,
        req: &Request,
        form: Vec<(String, String)>,
    ) -> std::io::Result<Vec<u8>> {
        let get = |k: &str| {
            form.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        let token = get("ClientToken");
        let fingerprint = {
            let mut f: Vec<&(String, String)> =
                form.iter().filter(|(k, _)| k != "ClientToken").collect();
            f.sort();
            format!("{f:?}")
        };
        if let Some(t) = &token {
            let mut st = self.state.lock_or_recover();
            if let Some((fp, answer)) = st.tokens.get(t).cloned() {
                if fp != fingerprint {
                    return Ok(ec2_error(
                        400,
                        "IdempotentParameterMismatch",
                        "The client token you have provided is associated with a resource that is already deleted or the request parameters differ",
                    ));
                }
                st.replayed += 1;
                eprintln!(
                    "fault proxy: CreateFleet with a known client token: first answer replayed"
                );
                return Ok(answer);
            }
        }
        let capacity_type =
            match get("TargetCapacitySpecification.DefaultTargetCapacityType").as_deref() {
                Some("spot") => "spot",
                _ => "on-demand",
            };
        // (config index, override index) → (type, subnet)
        let mut overrides: BTreeMap<(u32, u32), (String, String)> = BTreeMap::new();
        for (k, v) in &form {
            let Some(rest) = k.strip_prefix("LaunchTemplateConfigs.") else {
                continue;
            };
            let parts: Vec<&str> = rest.split('.').collect();
            if let [i, "Overrides", j, field] = parts.as_slice() {
                let (Ok(i), Ok(j)) = (i.parse(), j.parse()) else {
                    continue;
                };
                let e = overrides.entry((i, j)).or_default();
                match *field {
                    "InstanceType" => e.0 = v.clone(),
                    "SubnetId" => e.1 = v.clone(),
                    _ => {}
                }
            }
        }
        let mut ranked = Vec::new();
        for ((i, _), (t, s)) in &overrides {
            let zone = self.zone_of(s).await?;
            ranked.push((price(t, capacity_type), *i, t.clone(), s.clone(), zone));
        }
        ranked.sort_by(|a, b| {
            a.0.total_cmp(&b.0)
                .then_with(|| a.2.cmp(&b.2))
                .then_with(|| a.3.cmp(&b.3))
        });
        let mut errors = String::new();
        let mut healthy = Vec::new();
        let (allocation, lag) = {
            let mut st = self.state.lock_or_recover();
            st.fleet_calls += 1;
            for (_, i, t, s, z) in &ranked {
                let error = |code: &str, message: &str| {
                    format!(
                        "<item><launchTemplateAndOverrides><overrides><instanceType>{t}</instanceType><subnetId>{s}</subnetId><availabilityZone>{z}</availabilityZone></overrides></launchTemplateAndOverrides><lifecycle>{capacity_type}</lifecycle><errorCode>{code}</errorCode><errorMessage>{message}</errorMessage></item>"
                    )
                };
                let refusal = st.refusals.get(t).or_else(|| st.refusals.get("*"));
                if let Some(code) = refusal {
                    errors += &error(code, &refusal_message(code, t));
                } else if st
                    .faults
                    .contains(&(t.clone(), z.clone(), capacity_type.to_string()))
                {
                    errors += &error(
                        "InsufficientInstanceCapacity",
                        &format!(
                            "We currently do not have sufficient {t} capacity in the Availability Zone you requested ({z})."
                        ),
                    );
                } else {
                    healthy.push((*i, t.clone(), s.clone(), z.clone()));
                }
            }
            (st.unkind.allocation, st.unkind.describe_lag)
        };
        let pick = match allocation {
            Allocation::Cheapest => 0,
            Allocation::NotCheapest => {
                // Rotate over the others, so successive fleets spread over them.
                let others = healthy
                    .iter()
                    .filter(|h| healthy.first().is_some_and(|c| c.1 != h.1))
                    .count();
                let calls = self.state.lock_or_recover().fleet_calls;
                if others == 0 {
                    0
                } else {
                    healthy.len() - others + calls % others
                }
            }
        };
        let Some((i, t, s, z)) = healthy.get(pick).cloned() else {
            let xml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CreateFleetResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>fault-proxy</requestId><fleetId>fleet-faultproxy</fleetId><errorSet>{errors}</errorSet><fleetInstanceSet/></CreateFleetResponse>"
            );
            let answer = http_response(200, "text/xml", xml.as_bytes());
            if let Some(t) = token {
                self.state
                    .lock_or_recover()
                    .tokens
                    .insert(t, (fingerprint, answer.clone()));
            }
            return Ok(answer);
        };
        eprintln!(
            "fault proxy: CreateFleet launches {t} in {z} ({capacity_type}; cheapest healthy was {})",
            healthy.first().map_or("-", |h| h.1.as_str())
        );
        self.state
            .lock_or_recover()
            .launched
            .push((t.clone(), z, capacity_type.to_string()));
        let mut kept: Vec<(String, String)> = form
            .iter()
            .filter(|(k, _)| !k.starts_with("LaunchTemplateConfigs."))
            .cloned()
            .collect();
        let spec_prefix = format!("LaunchTemplateConfigs.{i}.LaunchTemplateSpecification.");
        for (k, v) in &form {
            if let Some(field) = k.strip_prefix(&spec_prefix) {
                kept.push((
                    format!("LaunchTemplateConfigs.1.LaunchTemplateSpecification.{field}"),
                    v.clone(),
                ));
            }
        }
        kept.push(("LaunchTemplateConfigs.1.Overrides.1.InstanceType".into(), t));
        kept.push(("LaunchTemplateConfigs.1.Overrides.1.SubnetId".into(), s));
        let body = form_encode(&kept);
        let resp = forward(&self.upstream, req, body.as_bytes()).await?;
        let resp = if errors.is_empty() {
            resp
        } else {
            add_fleet_errors(&resp, &errors)
        };
        let mut st = self.state.lock_or_recover();
        if !lag.is_zero() {
            let text = String::from_utf8_lossy(split_response(&resp).1).into_owned();
            for id in instance_ids(&text) {
                st.hidden_until.insert(id, Instant::now() + lag);
            }
        }
        if let Some(t) = token {
            st.tokens.insert(t, (fingerprint, resp.clone()));
        }
        Ok(resp)
    }
}

/// The message EC2 gives with a refusal `code` for `instance_type`.
fn refusal_message(code: &str, instance_type: &str) -> String {
    match code {
        "UnauthorizedOperation" => "You are not authorized to perform this operation. Encoded authorization failure message: fault-proxy".into(),
        "VcpuLimitExceeded" => format!("You have requested more vCPU capacity than your current vCPU limit allows for the instance bucket that the specified instance type {instance_type} belongs to."),
        "MaxSpotInstanceCountExceeded" => "Max spot instance count exceeded".into(),
        "InvalidAMIID.NotFound" => "The image id does not exist".into(),
        other => format!("{other} (fault proxy)"),
    }
}

/// An EC2 query-API error answer.
fn ec2_error(status: u16, code: &str, message: &str) -> Vec<u8> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors><RequestID>fault-proxy</RequestID></Response>"
    );
    http_response(status, "text/xml", xml.as_bytes())
}

/// Instance ids in a CreateFleet answer (`<instanceIds><item>i-…</item>`).
fn instance_ids(xml: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(at) = rest.find("<instanceIds>") {
        rest = &rest[at + "<instanceIds>".len()..];
        let end = rest.find("</instanceIds>").unwrap_or(rest.len());
        let mut ids = &rest[..end];
        while let Some(v) = between(ids, "<item>", "</item>") {
            out.push(v.trim().to_string());
            ids = &ids[ids.find("</item>").unwrap_or(ids.len()) + "</item>".len()..];
        }
        rest = &rest[end..];
    }
    out
}

/// `xml` with each top-level `<item>` of its `<{set}>` passed through `edit`: `Some(text)`
/// puts `text` in the item's place, `None` keeps it. Returns the new text and how many items
/// were replaced. An answer without the set is returned as it is.
fn edit_set_items(
    xml: &str,
    set: &str,
    mut edit: impl FnMut(&str) -> Option<String>,
) -> (String, usize) {
    let (open_tag, close_tag) = (format!("<{set}>"), format!("</{set}>"));
    let (Some(open), Some(close)) = (xml.find(&open_tag), xml.rfind(&close_tag)) else {
        return (xml.to_string(), 0);
    };
    let start = open + open_tag.len();
    let inner = &xml[start..close];
    let mut out = String::new();
    let mut edited = 0;
    let mut depth = 0usize;
    let mut item_start = 0usize;
    let mut i = 0usize;
    while i < inner.len() {
        if inner[i..].starts_with("<item>") {
            if depth == 0 {
                item_start = i;
            }
            depth += 1;
            i += "<item>".len();
        } else if inner[i..].starts_with("</item>") {
            depth = depth.saturating_sub(1);
            i += "</item>".len();
            if depth == 0 {
                let item = &inner[item_start..i];
                match edit(item) {
                    Some(text) => {
                        edited += 1;
                        out += &text;
                    }
                    None => out += item,
                }
            }
        } else {
            let len = inner[i..].chars().next().map_or(1, char::len_utf8);
            if depth == 0 {
                out.push_str(&inner[i..i + len]);
            }
            i += len;
        }
    }
    (format!("{}{out}{}", &xml[..start], &xml[close..]), edited)
}

/// DescribeInstanceStatus' answer with each `impaired` instance's named summaries (`instanceStatus`,
/// `systemStatus`) replaced by an impaired one whose reachability failed at the given time;
/// returns the new text and how many instances were rewritten.
fn impair_statuses(
    xml: &str,
    impaired: &BTreeMap<String, Vec<(String, String)>>,
) -> (String, usize) {
    edit_set_items(xml, "instanceStatusSet", |item| {
        let (_, checks) = impaired
            .iter()
            .find(|(id, _)| item.contains(&format!("<instanceId>{id}</instanceId>")))?;
        let mut item = item.to_string();
        for (check, since) in checks {
            let failed = format!(
                "<{check}><status>impaired</status><details><item><name>reachability</name><status>failed</status><impairedSince>{since}</impairedSince></item></details></{check}>"
            );
            let (o, c) = (format!("<{check}>"), format!("</{check}>"));
            match (item.find(&o), item.find(&c)) {
                (Some(a), Some(b)) if a < b => {
                    item.replace_range(a..b + c.len(), &failed);
                }
                _ => {
                    let end = item.len() - "</item>".len();
                    item.insert_str(end, &failed);
                }
            }
        }
        Some(item)
    })
}

/// DescribeInstances' answer without the reservations holding a `hidden` instance; returns the
/// new text and how many reservations were dropped.
fn drop_reservations(xml: &str, hidden: &BTreeSet<String>) -> (String, usize) {
    edit_set_items(xml, "reservationSet", |item| {
        hidden
            .iter()
            .any(|id| item.contains(&format!("<instanceId>{id}</instanceId>")))
            .then(String::new)
    })
}

/// `resp` (a CreateFleet answer) with `errors` added to its error set.
fn add_fleet_errors(resp: &[u8], errors: &str) -> Vec<u8> {
    {
        let (head, body) = split_response(resp);
        let text = String::from_utf8_lossy(body);
        let with_errors = if text.contains("<errorSet/>") {
            text.replacen("<errorSet/>", &format!("<errorSet>{errors}</errorSet>"), 1)
        } else if text.contains("<errorSet>") {
            text.replacen("<errorSet>", &format!("<errorSet>{errors}"), 1)
        } else {
            text.replacen(
                "</CreateFleetResponse>",
                &format!("<errorSet>{errors}</errorSet></CreateFleetResponse>"),
                1,
            )
        };
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(200);
        http_response(status, "text/xml", with_errors.as_bytes())
    }
}

/// The price the proxy ranks by: catalog list price, or its spot fraction.
fn price(instance_type: &str, capacity_type: &str) -> f64 {
    let od = ec2_data::find(instance_type).map_or(10.0, |t| t.on_demand_usd);
    if capacity_type == "spot" {
        od * ec2_data::spot_fraction(instance_type)
    } else {
        od
    }
}

struct Request {
    /// Request line and headers, each ending in CRLF, without the blank line.
    head: String,
    body: Vec<u8>,
}

async fn read_request(conn: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut head = String::new();
    let mut content_length = 0usize;
    let mut expect_continue = false;
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("expect:") && lower.contains("100-continue") {
            expect_continue = true;
        }
        head += &line;
    }
    if expect_continue {
        conn.get_mut()
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await?;
    }
    let mut body = vec![0; content_length];
    conn.read_exact(&mut body).await?;
    Ok(Some(Request { head, body }))
}

/// Sends the request upstream on a fresh connection and returns the whole response, re-framed
/// with a Content-Length.
async fn forward(upstream: &str, req: &Request, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut out = String::new();
    for line in req.head.lines() {
        let lower = line.to_ascii_lowercase();
        if lower.starts_with("content-length:")
            || lower.starts_with("connection:")
            || lower.starts_with("expect:")
        {
            continue;
        }
        out += line;
        out += "\r\n";
    }
    out += &format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut up = TcpStream::connect(upstream).await?;
    up.write_all(out.as_bytes()).await?;
    up.write_all(body).await?;
    let mut resp = Vec::new();
    up.read_to_end(&mut resp).await?;
    let (head, raw_body) = split_response(&resp);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        dechunk(raw_body)
    } else {
        raw_body.to_vec()
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(502);
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("content-type:")
                .then(|| l[13..].trim().to_string())
        })
        .unwrap_or_else(|| "text/xml".into());
    Ok(http_response(status, &content_type, &body))
}

fn split_response(resp: &[u8]) -> (String, &[u8]) {
    let at = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(resp.len(), |p| p + 4);
    (
        String::from_utf8_lossy(&resp[..at]).into_owned(),
        &resp[at..],
    )
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&raw[..eol]).trim(), 16).unwrap_or(0);
        // Checked: the size is whatever hex the upstream sent.
        let end = (eol + 2).saturating_add(size);
        if size == 0 || raw.len() < end {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..end]);
        raw = &raw[end.saturating_add(2).min(raw.len())..];
    }
}

fn http_response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = s.find(open)? + open.len();
    let end = s[start..].find(close)? + start;
    Some(&s[start..end])
}

fn form_decode(body: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |i: usize| {
        std::str::from_utf8(&b[i..i + 2])
            .ok()
            .and_then(|h| u8::from_str_radix(h, 16).ok())
    };
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() && hex(i + 1).is_some() => {
                out.extend(hex(i + 1));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form_encode(pairs: &[(String, String)]) -> String {
    let enc = |s: &str| -> String {
        s.bytes()
            .map(|c| match c {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                    (c as char).to_string()
                }
                _ => format!("%{c:02X}"),
            })
            .collect()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_size_beyond_usize_ends_the_body_instead_of_panicking() {
        assert_eq!(dechunk(b"3\r\nabc\r\nffffffffffffffff\r\nxyz\r\n"), b"abc");
        assert_eq!(dechunk(b"fffffffffffffffff\r\nx"), b"");
    }

    #[test]
    fn a_poisoned_proxy_state_does_not_stop_the_next_call() {
        let proxy = FaultProxy {
            addr: "127.0.0.1:1".parse().unwrap(),
            upstream: String::new(),
            state: Arc::default(),
        };
        let state = proxy.state.clone();
        let panicked = std::thread::spawn(move || {
            let _held = state.lock();
            panic!("a bug while holding the proxy state");
        })
        .join();
        assert!(panicked.is_err());
        assert_eq!(proxy.fleet_calls(), 0);
    }

    #[test]
    fn form_round_trips_through_decode_and_encode() {
        let pairs = vec![
            ("A.1".to_string(), "$Latest x/y".to_string()),
            ("B".into(), "é%".into()),
        ];
        assert_eq!(form_decode(form_encode(&pairs).as_bytes()), pairs);
        assert_eq!(percent_decode("a+b%2"), "a b%2");
    }

    #[test]
    fn lagging_instances_leave_describe_answers_whole_reservations_at_a_time() {
        let xml = "<DescribeInstancesResponse><reservationSet>\
            <item><reservationId>r-1</reservationId><instancesSet><item><instanceId>i-old</instanceId><tagSet><item><key>a</key></item></tagSet></item></instancesSet></item>\
            <item><reservationId>r-2</reservationId><instancesSet><item><instanceId>i-new</instanceId></item></instancesSet></item>\
            </reservationSet></DescribeInstancesResponse>";
        let hidden = BTreeSet::from(["i-new".to_string()]);
        let (out, dropped) = drop_reservations(xml, &hidden);
        assert_eq!(dropped, 1);
        assert!(out.contains("i-old") && out.contains("<key>a</key>"));
        assert!(!out.contains("i-new") && !out.contains("r-2"));
        assert!(out.ends_with("</reservationSet></DescribeInstancesResponse>"));
        let (same, none) = drop_reservations(xml, &BTreeSet::new());
        assert_eq!((same.as_str(), none), (xml, 0));
    }

    #[test]
    fn an_impaired_instance_fails_its_check_and_the_others_stay_ok() {
        let ok = |id: &str| {
            format!(
                "<item><instanceId>{id}</instanceId><instanceStatus><status>ok</status><details><item><name>reachability</name><status>passed</status></item></details></instanceStatus><systemStatus><status>ok</status><details><item><name>reachability</name><status>passed</status></item></details></systemStatus></item>"
            )
        };
        let xml = format!(
            "<DescribeInstanceStatusResponse><instanceStatusSet>{}{}</instanceStatusSet></DescribeInstanceStatusResponse>",
            ok("i-1"),
            ok("i-2")
        );
        let impaired = BTreeMap::from([(
            "i-2".to_string(),
            vec![(
                "systemStatus".to_string(),
                "2026-01-01T00:00:00Z".to_string(),
            )],
        )]);
        let (out, n) = impair_statuses(&xml, &impaired);
        assert_eq!(n, 1);
        assert!(out.contains(&ok("i-1")), "{out}");
        assert!(
            out.contains("<instanceId>i-2</instanceId><instanceStatus><status>ok</status>"),
            "{out}"
        );
        assert!(
            out.contains("<systemStatus><status>impaired</status><details><item><name>reachability</name><status>failed</status><impairedSince>2026-01-01T00:00:00Z</impairedSince></item></details></systemStatus></item></instanceStatusSet>"),
            "{out}"
        );
        // Nothing to impair in the answer: left as it was.
        let none = BTreeMap::from([("i-9".to_string(), impaired["i-2"].clone())]);
        assert_eq!(impair_statuses(&xml, &none), (xml.clone(), 0));
    }

    #[test]
    fn fleet_answers_name_their_instances() {
        let xml = "<CreateFleetResponse><fleetInstanceSet><item><instanceIds><item>i-1</item><item>i-2</item></instanceIds></item></fleetInstanceSet></CreateFleetResponse>";
        assert_eq!(instance_ids(xml), ["i-1", "i-2"]);
        assert!(instance_ids("<CreateFleetResponse/>").is_empty());
    }

    #[test]
    fn refusals_read_like_ec2s() {
        assert!(refusal_message("UnauthorizedOperation", "t3.large").contains("not authorized"));
        assert!(refusal_message("VcpuLimitExceeded", "t3.large").contains("vCPU limit"));
        let answer = String::from_utf8(ec2_error(
            503,
            "RequestLimitExceeded",
            "Request limit exceeded.",
        ))
        .unwrap();
        assert!(answer.starts_with("HTTP/1.1 503"));
        assert!(answer.contains("<Code>RequestLimitExceeded</Code>"));
    }

    #[test]
    fn chunked_bodies_are_reassembled() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), b"abcde");
    }
}
