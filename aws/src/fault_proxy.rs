//! A small HTTP proxy in front of moto that adds what moto lacks for launches: capacity errors
//! and an allocation strategy. For `CreateFleet` it orders the overrides by price (the embedded
//! catalog's list price, or its spot fraction), answers every override in a failing pool
//! (instance type × zone × capacity type) with a fleet `Errors` entry, and forwards the request
//! to moto with only the first healthy override, so moto launches exactly that pool. Every
//! other call passes through unchanged. It can also play the Price List API (`GetProducts`),
//! which moto lacks, from a table the test sets (refusing it without one). Test support, not
//! production code.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use adze_scheduling::catalog::ec2_data;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

type Pool = (String, String, String);

#[derive(Default)]
struct State {
    faults: BTreeSet<Pool>,
    subnet_zones: BTreeMap<String, String>,
    /// Pools moto was asked to launch, in order.
    launched: Vec<Pool>,
    fleet_calls: usize,
    /// On-demand prices served as the Price List API; None refuses GetProducts.
    price_list: Option<BTreeMap<String, f64>>,
    /// GetProducts pages served.
    price_pages: usize,
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
        self.state.lock().unwrap().faults.insert((
            instance_type.into(),
            zone.into(),
            capacity_type.into(),
        ));
    }

    /// From now on answers `GetProducts` with these on-demand prices (one product per type).
    pub fn serve_prices(&self, prices: BTreeMap<String, f64>) {
        self.state.lock().unwrap().price_list = Some(prices);
    }

    /// How many GetProducts pages were answered.
    pub fn price_pages(&self) -> usize {
        self.state.lock().unwrap().price_pages
    }

    pub fn launched(&self) -> Vec<Pool> {
        self.state.lock().unwrap().launched.clone()
    }

    pub fn fleet_calls(&self) -> usize {
        self.state.lock().unwrap().fleet_calls
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
            let trace = std::env::var_os("ADZE_FAULT_PROXY_TRACE").is_some();
            let started = std::time::Instant::now();
            if trace {
                eprintln!("fault proxy: -> {action}");
            }
            let response = if price_list {
                self.get_products(&req.body)
            } else if form
                .iter()
                .any(|(k, v)| k == "Action" && v == "CreateFleet")
            {
                self.create_fleet(&req, form).await?
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

    async fn zone_of(&self, subnet: &str) -> std::io::Result<String> {
        if let Some(z) = self.state.lock().unwrap().subnet_zones.get(subnet) {
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
            .lock()
            .unwrap()
            .subnet_zones
            .insert(subnet.into(), zone.clone());
        Ok(zone)
    }

    /// One page of `GetProducts`: products in type order, `MaxResults` at a time (at most 100,
    /// as AWS), `NextToken` being the index of the next product.
    fn get_products(&self, body: &[u8]) -> Vec<u8> {
        let req: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let region = req["Filters"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["Field"] == "regionCode")
            .and_then(|f| f["Value"].as_str())
            .unwrap_or("us-east-1")
            .to_string();
        let start: usize = req["NextToken"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let size = req["MaxResults"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
        let mut state = self.state.lock().unwrap();
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
        let page: Vec<String> = prices
            .iter()
            .skip(start)
            .take(size)
            .map(|(t, p)| crate::pricing::product_document(t, &region, &format!("{p:.10}")))
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
        let mut chosen = None;
        {
            let mut st = self.state.lock().unwrap();
            st.fleet_calls += 1;
            for (_, i, t, s, z) in &ranked {
                if st
                    .faults
                    .contains(&(t.clone(), z.clone(), capacity_type.to_string()))
                {
                    errors += &format!(
                        "<item><launchTemplateAndOverrides><overrides><instanceType>{t}</instanceType><subnetId>{s}</subnetId><availabilityZone>{z}</availabilityZone></overrides></launchTemplateAndOverrides><lifecycle>{capacity_type}</lifecycle><errorCode>InsufficientInstanceCapacity</errorCode><errorMessage>We currently do not have sufficient {t} capacity in the Availability Zone you requested ({z}).</errorMessage></item>"
                    );
                } else if chosen.is_none() {
                    chosen = Some((*i, t.clone(), s.clone()));
                    st.launched
                        .push((t.clone(), z.clone(), capacity_type.to_string()));
                }
            }
        }
        let Some((i, t, s)) = chosen else {
            let xml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CreateFleetResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\"><requestId>fault-proxy</requestId><fleetId>fleet-faultproxy</fleetId><errorSet>{errors}</errorSet><fleetInstanceSet/></CreateFleetResponse>"
            );
            return Ok(http_response(200, "text/xml", xml.as_bytes()));
        };
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
        if errors.is_empty() {
            return Ok(resp);
        }
        let (head, body) = split_response(&resp);
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
        Ok(http_response(status, "text/xml", with_errors.as_bytes()))
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
        if size == 0 || raw.len() < eol + 2 + size {
            return out;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[(eol + 4 + size).min(raw.len())..];
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
    fn form_round_trips_through_decode_and_encode() {
        let pairs = vec![
            ("A.1".to_string(), "$Latest x/y".to_string()),
            ("B".into(), "é%".into()),
        ];
        assert_eq!(form_decode(form_encode(&pairs).as_bytes()), pairs);
        assert_eq!(percent_decode("a+b%2"), "a b%2");
    }

    #[test]
    fn chunked_bodies_are_reassembled() {
        assert_eq!(dechunk(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), b"abcde");
    }
}
