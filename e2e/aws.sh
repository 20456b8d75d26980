#!/usr/bin/env bash
# End-to-end test of `adze-provisioner run --cloud-provider aws` against moto (EC2, SSM, SQS,
# EKS on loopback) and a real Kubernetes 1.20 control plane (e2e/harness). Moto sits behind
# the project's fault proxy, run as unkind as EC2 documents itself: fleets that launch another
# override than the cheapest, new instances missing from DescribeInstances for a while,
# RequestLimitExceeded throttling, and one instance type whose launches are refused
# (UnauthorizedOperation). Section 6 runs a Capacity Block through aws/ci/capacity_reservations.py
# (EC2 reservations, which moto lacks): used before on-demand, full, drained ahead of its end.
# Skips unless ADZE_E2E=1.
#
#   ADZE_E2E=1 e2e/aws.sh
#
# Moto's instances boot nothing, so e2e/aws-registrar.py plays their boot: it reads each
# instance's user data as nodeadm (AL2023) or Bottlerocket would (by its image), refuses what
# they refuse, and starts a kubemark hollow kubelet for it (real kubelet code over a fake
# runtime, e2e/harness/hollow-node.sh; its own client certificate, so the Node authorizer and
# NodeRestriction apply), labelled and sized from the instance and its user data; the kubelet
# registers the Node and runs the pods bound to it, and is stopped when the instance leaves
# `running`. The node lifecycle controller runs (node-monitor-grace-period 20s), so waits on
# nodes are measured, not assumed instant. ADZE_E2E_AWS_LAG (seconds, default 8) sets the
# DescribeInstances lag.
# Prints PASS:/FAIL: lines and "N passed, N failed"; exits non-zero on failure. Moto, the proxy,
# the registrar, every hollow kubelet, the provisioner and the control plane are always stopped
# (EXIT trap);
# ADZE_KEEP=1 keeps the logs dir.
set -uo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
e2e_enabled_or_skip
cd "$(dirname "$0")/.." || exit 1
root=$PWD
harness=$root/e2e/harness
venv="${ADZE_MOTO_VENV:-$HOME/.cache/adze/moto-venv}"
moto_version="${ADZE_MOTO_VERSION:-5.2.5}"
t_start=$(now)

"$harness/build-control-plane.sh" >/dev/null || { echo "FAIL: control plane build"; exit 1; }
"$harness/build-kubemark.sh" >/dev/null 2>"/tmp/adze-kubemark-build.$$.log" \
  || { cat "/tmp/adze-kubemark-build.$$.log"; echo "FAIL: kubemark build"; exit 1; }
rm -f "/tmp/adze-kubemark-build.$$.log"
# ADZE_E2E_BIN_DIR: binaries already built elsewhere (e.g. a debug build); skips the release build.
if [[ -n "${ADZE_E2E_BIN_DIR:-}" ]]; then
  bindir=$ADZE_E2E_BIN_DIR
else
  "$harness/build-binaries.sh" || { echo "FAIL: cargo build"; exit 1; }
  bindir=${CARGO_TARGET_DIR:-$root/target}/release
fi
if ! "$venv/bin/moto_server" --help >/dev/null 2>&1; then
  echo "installing moto[server]==$moto_version into $venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install --quiet "moto[server]==$moto_version" ||
    { echo "FAIL: moto install"; exit 1; }
fi

dir=$(mktemp -d /tmp/adze-e2e-aws.XXXXXX)
E2E_DIAG_LOGS="$dir/provisioner.log $dir/registrar.log"  # tailed by e2e_snapshot on a failure
moto_pid=; proxy_pid=; reg_pid=; prov_pid=
cleanup() {
  for p in "$prov_pid" "$reg_pid" "$proxy_pid" "$moto_pid"; do
    [[ -n "$p" ]] && { kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; }
  done
  "$harness/hollow-node.sh" stop-all "$dir" >/dev/null 2>&1
  "$harness/control-plane.sh" down "$dir" >/dev/null 2>&1
  if [[ "$failed" -gt 0 || "${ADZE_KEEP:-0}" == 1 ]]; then echo "logs kept in $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap "exit 1" INT TERM   # so the EXIT trap runs when the suite is killed


# ---- moto and the fault proxy ---------------------------------------------------------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$venv/bin/python" "$root/aws/ci/moto_server.py" -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 &
moto_pid=$!
export MOTO_URL="http://127.0.0.1:$port"
wait_for 30 curl -fs -o /dev/null "$MOTO_URL/moto-api/" || { echo "FAIL: moto did not start"; cat "$dir/moto.log"; exit 1; }
# The proxy also plays the Price List API (moto has none) with one price that differs from the
# embedded catalog's ($0.096), so /metrics shows which source priced m5.large.
lag=${ADZE_E2E_AWS_LAG:-8}
"$bindir/adze-aws-fault-proxy" "$MOTO_URL" --allocation not-cheapest --describe-lag "$lag" --throttle 10:5 \
  --refuse t3.small=UnauthorizedOperation m5.large=0.0955 >"$dir/proxy.txt" 2>&1 &
proxy_pid=$!
wait_for 10 grep -q "listening on" "$dir/proxy.txt" || { echo "FAIL: fault proxy did not start"; cat "$dir/proxy.txt"; exit 1; }
proxy_url=$(sed -n 's/^listening on //p' "$dir/proxy.txt")
echo "moto $moto_version on $MOTO_URL, fault proxy on $proxy_url"
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export CLUSTER_NAME=e2e
SSM_PREFIX=/adze-e2e
K8S_VERSION=1.20
QUEUE=adze-e2e-interruptions
SERVICE_CIDR=10.100.0.0/16
# awspy: runs a python snippet (stdin) with boto3 clients `ec2`, `ssm`, `sqs`, `iam` against moto.
awspy() {
  "$venv/bin/python" - <<<"import boto3, json, os, sys, time
kw = dict(endpoint_url=os.environ['MOTO_URL'], region_name='us-east-1')
ec2, ssm, sqs, iam = (boto3.client(s, **kw) for s in ('ec2', 'ssm', 'sqs', 'iam'))
$(cat)"
}

# What an EKS cluster's account would already hold: discovery-tagged subnets in two zones and a
# node security group, the node role, the family image's SSM parameter (under our prefix: moto
# refuses to create /aws/service parameters), and the EventBridge interruption queue.
awspy >"$dir/aws.json" <<PY
subnets = [s for s in ec2.describe_subnets(Filters=[{'Name': 'default-for-az', 'Values': ['true']}])['Subnets']
           if s['AvailabilityZone'] in ('us-east-1a', 'us-east-1b')]
tag = {'Key': 'adze.sh/discovery', 'Value': '$CLUSTER_NAME'}
ec2.create_tags(Resources=[s['SubnetId'] for s in subnets], Tags=[tag])
vpc = ec2.describe_vpcs(Filters=[{'Name': 'is-default', 'Values': ['true']}])['Vpcs'][0]['VpcId']
sg = ec2.create_security_group(GroupName='$CLUSTER_NAME-nodes', Description='e2e nodes', VpcId=vpc,
    TagSpecifications=[{'ResourceType': 'security-group', 'Tags': [tag]}])['GroupId']
images = sorted(i['ImageId'] for i in ec2.describe_images(Filters=[{'Name': 'architecture', 'Values': ['x86_64']}])['Images'])
ami, ami_br = images[0], images[1]
ssm.put_parameter(Name='$SSM_PREFIX/eks/optimized-ami/$K8S_VERSION/amazon-linux-2023/x86_64/standard/recommended/image_id',
    Value=ami, Type='String')
ssm.put_parameter(Name='$SSM_PREFIX/bottlerocket/aws-k8s-$K8S_VERSION/x86_64/latest/image_id', Value=ami_br, Type='String')
# The EKS cluster as DescribeCluster shows it: the provisioner takes the service CIDR from here
# (its endpoint and CA are moto's inventions, so the suite sets those two by flag).
boto3.client('eks', **kw).create_cluster(name='$CLUSTER_NAME', version='$K8S_VERSION',
    roleArn='arn:aws:iam::123456789012:role/eks', resourcesVpcConfig={'subnetIds': [s['SubnetId'] for s in subnets]},
    kubernetesNetworkConfig={'serviceIpv4Cidr': '$SERVICE_CIDR'})
sqs.create_queue(QueueName='$QUEUE')
iam.create_role(RoleName='$CLUSTER_NAME-nodes', AssumeRolePolicyDocument=json.dumps({'Version': '2012-10-17',
    'Statement': [{'Effect': 'Allow', 'Principal': {'Service': 'ec2.amazonaws.com'}, 'Action': 'sts:AssumeRole'}]}))
print(json.dumps({'subnets': sorted(s['SubnetId'] for s in subnets), 'sg': sg, 'ami': ami, 'ami_br': ami_br}))
PY
[[ -s "$dir/aws.json" ]] || { echo "FAIL: moto setup"; exit 1; }
ami=$(jq -r .ami "$dir/aws.json"); ami_br=$(jq -r .ami_br "$dir/aws.json"); sg=$(jq -r .sg "$dir/aws.json"); subnets=$(jq -c .subnets "$dir/aws.json")
echo "moto: subnets $subnets, security group $sg, image $ami"

# ---- control plane ------------------------------------------------------------------------------
# The node lifecycle controller on (the harness default leaves it off for Node objects nobody
# heartbeats): a stopped kubelet's Node turns NotReady, a new one's not-ready taint is lifted.
ADZE_NODE_LIFECYCLE=1 control_plane_up "$dir"

"$bindir/crdgen" --without-cel | k apply -f - >/dev/null
wait_for 30 k wait --for condition=established --timeout=1s crd/nodeclaims.adze.sh crd/nodepools.adze.sh crd/ec2nodeclasses.aws.adze.sh
check "CRDs installed and established" k get crd ec2nodeclasses.aws.adze.sh
# After the CRDs: Helm then skips the chart's crds/ (CEL rules a 1.20 API server lacks).
adze_rbac aws

k apply -f - >/dev/null <<YAML
apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {adze.sh/discovery: $CLUSTER_NAME}}]
  securityGroupSelectorTerms: [{tags: {adze.sh/discovery: $CLUSTER_NAME}}]
  role: $CLUSTER_NAME-nodes
  tags: {team: e2e}
---
apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata: {name: bottlerocket}
spec:
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  subnetSelectorTerms: [{tags: {adze.sh/discovery: $CLUSTER_NAME}}]
  securityGroupSelectorTerms: [{tags: {adze.sh/discovery: $CLUSTER_NAME}}]
  role: $CLUSTER_NAME-nodes
---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: br}
spec:
  template:
    metadata: {labels: {e2e-pool: br}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: bottlerocket}
      requirements:
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, m5.large]}
  limits: {cpu: "10"}
---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: refused}
spec:
  template:
    metadata: {labels: {e2e-pool: refused}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      requirements:
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [t3.small]}
  limits: {cpu: "10"}
---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: general}
spec:
  template:
    # kubelet refuses node-restriction.kubernetes.io/ in --node-labels: registration sets it.
    metadata: {labels: {e2e-pool: general, node-restriction.kubernetes.io/team: e2e}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: default}
      # Section 2 drains a node under a PDB that allows nothing: at this deadline the
      # provisioner deletes the pods itself (RBAC: pods delete, in AWS mode too).
      terminationGracePeriod: 20s
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
        - {key: adze.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large, c5.xlarge, m5.large, m5.xlarge]}
  limits: {cpu: "100"}
YAML

# ---- the registrar and the provisioner ---------------------------------------------------------
PLANE_DIR=$dir BOTTLEROCKET_IMAGES=$ami_br "$venv/bin/python" "$root/e2e/aws-registrar.py" >"$dir/registrar.log" 2>&1 &
reg_pid=$!
# Consolidation is proven in e2e/disruption.sh; here it would replace nodes the checks count.
KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bindir/adze-provisioner" run --cloud-provider aws --aws-endpoint "$proxy_url" --region us-east-1 \
  --cluster-name "$CLUSTER_NAME" --cluster-endpoint "$APISERVER" --cluster-ca "$(base64 -w0 "$ADZE_CA_CERT")" \
  --ssm-prefix "$SSM_PREFIX" --interruption-queue "$QUEUE" --launch-timeout 20s \
  --disruption-dry-run --garbage-collection-grace 10s --metrics-addr 127.0.0.1:0 \
  >"$dir/provisioner.log" 2>&1 &
prov_pid=$!
wait_for 60 grep -q "cluster state synced" "$dir/provisioner.log"
check "provisioner (--cloud-provider aws) started and synced its watches" grep -q "cluster state synced" "$dir/provisioner.log"
# The AWS provider starts once this replica leads.
wait_for 60 grep -q "polling the interruption queue" "$dir/provisioner.log"
check "provisioner polls the interruption queue" grep -q "polling the interruption queue" "$dir/provisioner.log"
# (control_plane_up clears *.log in $dir, hence proxy.txt; the provisioner's log has colours.)
check "join settings discovered: service CIDR $SERVICE_CIDR from EKS DescribeCluster, version $K8S_VERSION from the API server" \
  bash -c "sed 's/\x1b\[[0-9;]*m//g' '$dir/provisioner.log' | grep 'nodes will join with these cluster settings' |
           grep 'service_cidr=$SERVICE_CIDR' | grep -q 'version=$K8S_VERSION'"

class_ready() {
  kj ec2nodeclass default | jqe --arg ami "$ami" --arg sg "$sg" --argjson subnets "$subnets" '
    ([.status.conditions[]? | select(.type=="Ready" and .status=="True")] | length == 1)
    and ([.status.subnets[].id] | sort == $subnets)
    and ([.status.securityGroups[].id] == [$sg])
    and ([.status.amis[].id] | index($ami) != null)' >/dev/null
}
wait_for 45 class_ready
check "EC2NodeClass Ready with the tagged subnets (2), security group and the SSM image" class_ready
profile=$(kj ec2nodeclass default | jq -r '.status.instanceProfile // empty')
echo "instance profile: $profile"
profile_roles() {
  awspy <<PY
p = iam.get_instance_profile(InstanceProfileName='$profile')['InstanceProfile']
print(p['Path'], ','.join(r['RoleName'] for r in p['Roles']))
PY
}
check "an instance profile under /adze/$CLUSTER_NAME/ holding role $CLUSTER_NAME-nodes was made for the class" \
  count_is "/adze/$CLUSTER_NAME/ $CLUSTER_NAME-nodes" profile_roles

# ---- 1. pending pods -> NodeClaims -> CreateFleet -> Nodes -> pods Running --------------------
echo "== 6 pods x 1 cpu, NodePool 'general'"
k create namespace web >/dev/null
# deployment NAMESPACE NAME REPLICAS CPU [POOL]: pause pods of 1Gi on the pool's nodes (general).
deployment() { e2e_deployment "$1" "$2" "$3" "$4" 1Gi e2e-pool "${5:-general}"; }
claims() { k get nodeclaims -o name 2>/dev/null | wc -l; }
running_pods() { k get pods -n "$1" --field-selector=status.phase=Running -o name | wc -l; }
launched_claims() { kj nodeclaims | jq '[.items[] | select(.status.providerID != null)] | length'; }
initialized_claims() {
  kj nodeclaims | jq '[.items[] | select(any(.status.conditions[]?; .type=="Registered" and .status=="True")
    and any(.status.conditions[]?; .type=="Initialized" and .status=="True"))] | length'
}
# Instances of the cluster that carry a NodeClaim tag and are running, as JSON.
instances() {
  awspy <<PY
out = []
for r in ec2.describe_instances(Filters=[{'Name': 'tag:kubernetes.io/cluster/$CLUSTER_NAME', 'Values': ['owned']},
                                         {'Name': 'instance-state-name', 'Values': ['pending', 'running']}])['Reservations']:
    for i in r['Instances']:
        out.append({'id': i['InstanceId'], 'type': i['InstanceType'], 'zone': i['Placement']['AvailabilityZone'],
                    'image': i['ImageId'], 'subnet': i.get('SubnetId'), 'tags': {t['Key']: t['Value'] for t in i.get('Tags', [])}})
print(json.dumps(out))
PY
}
instance_state() { # ID
  awspy <<PY
print(ec2.describe_instances(InstanceIds=['$1'])['Reservations'][0]['Instances'][0]['State']['Name'])
PY
}
state_in() { # ID STATE... : the instance is in one of STATEs
  local s; s=$(instance_state "$1"); shift
  for w; do [[ "$s" == "$w" ]] && return 0; done; return 1
}

t0=$(now)
deployment web web 6 1 | k apply -f - >/dev/null
wait_for 60 bash -c "[ \$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -o name | wc -l) -gt 0 ]"
t_claims=$(now)
sleep 3   # the batch window: every claim of the first batch exists
n=$(claims)
wait_for 60 count_is "$n" launched_claims
t_launched=$(now)
echo "deployment -> first NodeClaim $(elapsed "$t0" "$t_claims") s; $n NodeClaims launched in moto $(elapsed "$t0" "$t_launched") s"
check "NodeClaims created for the pending pods ($n)" test "$n" -gt 0
check "every NodeClaim launched (providerID aws:///ZONE/i-...)" bash -c "
  kubectl --kubeconfig $KUBECONFIG get nodeclaims -o json | jqe '[.items[].status.providerID | test(\"^aws:///us-east-1[ab]/i-[0-9a-f]+$\")] | length > 0 and all' >/dev/null"
instances >"$dir/instances.json"
kj nodeclaims >"$dir/claims.json"
check "one running moto instance per NodeClaim ($n)" count_is "$n" jq 'length' "$dir/instances.json"
check "each instance tagged with cluster, NodePool, NodeClaim and the class's tags" jqe --slurpfile c "$dir/claims.json" '
  ([$c[0].items[].metadata.name] | sort) as $names
  | length >= 1 and ([.[].tags["adze.sh/nodeclaim"]] | sort) == $names
    and all(.[]; .tags["kubernetes.io/cluster/'"$CLUSTER_NAME"'"] == "owned" and .tags["adze.sh/nodepool"] == "general" and .tags.team == "e2e")' "$dir/instances.json"
check "each instance runs the SSM image in a tagged subnet" jqe --arg ami "$ami" --argjson subnets "$subnets" \
  'length >= 1 and all(.[]; .image == $ami and (.subnet as $s | $subnets | index($s) != null))' "$dir/instances.json"
check "each NodeClaim's instance-type label is its instance's (the fleet's pick, not the plan's) and within the NodePool's" jqe --slurpfile c "$dir/claims.json" '
  ([$c[0].items[] | {id: (.status.providerID | split("/") | last), type: .metadata.labels["node.kubernetes.io/instance-type"]}] | sort) as $want
  | length >= 1 and ([.[] | {id, type}] | sort) == $want and all(.[]; .type | test("^(c5|m5)\\.(x)?large$"))' "$dir/instances.json"
awspy >"$dir/templates.json" <<PY
lts = ec2.describe_launch_templates()['LaunchTemplates']
out = []
for t in lts:
    if not t['LaunchTemplateName'].startswith('adze-$CLUSTER_NAME-'):
        continue
    v = ec2.describe_launch_template_versions(LaunchTemplateId=t['LaunchTemplateId'])['LaunchTemplateVersions'][0]['LaunchTemplateData']
    import base64
    out.append({'name': t['LaunchTemplateName'], 'image': v.get('ImageId'),
                'userData': base64.b64decode(v.get('UserData', '')).decode(errors='replace'),
                'tokens': v.get('MetadataOptions', {}).get('HttpTokens')})
print(json.dumps(out))
PY
echo "launch templates: $(jq -c '[.[].name]' "$dir/templates.json")"
check "a launch template with the image, IMDSv2 required and user data joining this apiserver" jqe --arg ami "$ami" --arg api "$APISERVER" \
  'length >= 1 and all(.[]; .image == $ami and .tokens == "required" and (.userData | contains($api)))' "$dir/templates.json"

nodes_of_claims() { k get nodes -l adze.sh/nodeclaim -o name | wc -l; }
# Launch -> a hollow kubelet boots, registers, turns Ready; Adze then registers and initializes.
wait_for 180 count_is "$n" initialized_claims
t_init=$(now)
check "every NodeClaim Registered and Initialized ($n)" count_is "$n" initialized_claims
check "a Node per NodeClaim, providerID aws:///ZONE/ID, labelled by registration" count_is "$n" nodes_of_claims
# by_kubelet: every Node of an instance was registered by a hollow kubelet (v1.20.2 over the fake
# runtime), not written by the test.
by_kubelet() {
  kj nodes | jqe '[.items[] | select(.spec.providerID // "" | startswith("aws:///"))] | length > 0 and all(.[];
    .status.nodeInfo.kubeletVersion == "v1.20.2" and (.status.nodeInfo.containerRuntimeVersion | startswith("fakeRuntime://")))' >/dev/null
}
check "every Node was registered by its instance's kubelet (v1.20.2, fake runtime), with its own credentials" by_kubelet
kj nodes >"$dir/nodes-1.json"; kj nodeclaims >"$dir/claims-1.json"
echo "allocatable, the kubelet's (Node) against Adze's plan (NodeClaim):"
jq -r --slurpfile c "$dir/claims-1.json" '.items[] | select(.metadata.labels["adze.sh/nodeclaim"]) | . as $n
  | ($c[0].items[] | select(.metadata.name == $n.metadata.labels["adze.sh/nodeclaim"])) as $cl
  | "  \($n.metadata.labels["node.kubernetes.io/instance-type"]) \($n.metadata.name): node \($n.status.allocatable | {cpu, memory, "ephemeral-storage", pods} | tojson); nodeclaim \($cl.status.allocatable | {cpu, memory, "ephemeral-storage", pods} | tojson)"' "$dir/nodes-1.json"
# The kubelet's arithmetic against the planner's: cpu, memory, pods and ephemeral storage equal
# to the byte (the planner rounds the 10 % nodefs threshold as the kubelet does, in float32).
alloc_agree() {
  python3 - "$dir/nodes-1.json" "$dir/claims-1.json" <<'ALLOC'
import json, re, sys
U = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
def q(v):
    m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", v)
    return float(m.group(1)) * U[m.group(2)]
nodes, claims = (json.load(open(f))["items"] for f in sys.argv[1:3])
plan = {c["metadata"]["name"]: c["status"].get("allocatable") or {} for c in claims}
seen = 0
for n in nodes:
    c = plan.get(n["metadata"].get("labels", {}).get("adze.sh/nodeclaim"))
    if c is None:
        continue
    a = n["status"]["allocatable"]
    for r in ("cpu", "memory", "pods"):
        if q(a[r]) != q(c[r]):
            sys.exit(f"{n['metadata']['name']}: {r} node {a[r]} != nodeclaim {c[r]}")
    d = q(c["ephemeral-storage"]) - q(a["ephemeral-storage"])
    print(f"  {n['metadata']['name']}: ephemeral-storage planned - kubelet's = {d:.0f} bytes")
    if d != 0:
        sys.exit(f"{n['metadata']['name']}: ephemeral-storage off by {d:.0f} bytes")
    seen += 1
sys.exit(0 if seen else "no Node of a NodeClaim")
ALLOC
}
alloc_agree
check "each Node's allocatable as its kubelet computed it equals Adze's plan to the byte (cpu, memory, pods, ephemeral storage)" alloc_agree
wait_for 120 count_is 6 running_pods web
t_running=$(now)
echo "-> $n Nodes initialized $(elapsed "$t0" "$t_init") s; -> 6 pods Running $(elapsed "$t0" "$t_running") s"
check "all 6 pods bound by kube-scheduler to the new nodes and Running" count_is 6 running_pods web
check "pods landed only on NodeClaim nodes" bash -c "
  kubectl --kubeconfig $KUBECONFIG get pods -n web -o json | jq -r '.items[].spec.nodeName' | sort -u | while read -r nd; do
    kubectl --kubeconfig $KUBECONFIG get node \$nd -o jsonpath='{.metadata.labels.adze\\.sh/nodeclaim}' | grep -q . || exit 1; done"
sleep 2
check "no more NodeClaims than needed ($n)" count_is "$n" claims

url=$(grep -o 'on http://[0-9.:]*' "$dir/provisioner.log" | tail -n 1 | sed 's/^on //')
curl -fsS "$url/metrics" >"$dir/metrics.txt"
check "/metrics: $n NodeClaims launched and initialized for pool general" bash -c "
  grep -qx 'adze_nodeclaims_launched_total{nodepool=\"general\"} $n' '$dir/metrics.txt' &&
  grep -qx 'adze_nodeclaims_initialized_total{nodepool=\"general\"} $n' '$dir/metrics.txt'"
check "/metrics: on-demand prices from the Price List API (m5.large \$0.0955/h), the catalog's for types it did not price (c5.large \$0.085/h)" bash -c "
  grep -qx 'adze_cloudprovider_offering_price_dollars{instance_type=\"m5.large\",zone=\"us-east-1a\",capacity_type=\"on-demand\"} 0.0955' '$dir/metrics.txt' &&
  grep -qx 'adze_cloudprovider_offering_price_dollars{instance_type=\"c5.large\",zone=\"us-east-1a\",capacity_type=\"on-demand\"} 0.085' '$dir/metrics.txt' &&
  grep -Eq '^adze_cloudprovider_offering_price_dollars\{instance_type=\"m5.large\",zone=\"us-east-1b\",capacity_type=\"spot\"\} 0\.[0-9]+$' '$dir/metrics.txt'"

# ---- 2. deleting a NodeClaim terminates its instance ------------------------------------------
# Under a PDB that allows no eviction: the drain waits for the NodeClaim's
# terminationGracePeriod (20 s), then the provisioner deletes the pods (with its
# ServiceAccount: the chart must grant pods delete in AWS mode).
echo "== delete a NodeClaim (its pods under a PDB that allows nothing; terminationGracePeriod 20s)"
k apply -f - >/dev/null <<'YAML'
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {name: web-hold, namespace: web}
spec:
  maxUnavailable: 0
  selector: {matchLabels: {app: web}}
YAML
# The node holding most web pods, and its NodeClaim.
victim_node=$(kj pods -n web | jq -r '[.items[] | select(.spec.nodeName != null) | .spec.nodeName] | group_by(.) | max_by(length) | .[0]')
victim=$(k get node "$victim_node" -o jsonpath='{.metadata.labels.adze\.sh/nodeclaim}')
victim_id=$(k get nodeclaim "$victim" -o jsonpath='{.status.providerID}' | awk -F/ '{print $NF}')
victim_pods=$(k get pods -n web --field-selector "spec.nodeName=$victim_node" -o name | wc -l)
t0=$(now)
k delete nodeclaim "$victim" --wait=false >/dev/null
wait_for 10 bash -c "[ -n \"\$(kubectl --kubeconfig $KUBECONFIG get nodeclaim $victim -o jsonpath='{.metadata.deletionTimestamp}')\" ]"
vdeleted=$(date -d "$(k get nodeclaim "$victim" -o jsonpath='{.metadata.deletionTimestamp}')" +%s)
wait_for 90 bash -c "! kubectl --kubeconfig $KUBECONFIG get nodeclaim $victim"
t1=$(now)
echo "NodeClaim $victim ($victim_id, $victim_pods web pods) gone after $(elapsed "$t0" "$t1") s"
check "the NodeClaim is gone (drained, finalizer removed)" bash -c "! kubectl --kubeconfig $KUBECONFIG get nodeclaim $victim 2>/dev/null"
if (( victim_pods > 0 )); then
  check "its $victim_pods pods were deleted by the provisioner at the terminationGracePeriod, not before (20 s from $vdeleted)" \
    bash -c "grep -q 'force-deleted' '$dir/provisioner.log' && awk -v a=$vdeleted -v b=$t1 'BEGIN{exit !(b-a >= 20)}'"
else
  fail "the NodeClaim chosen held no web pods; the terminationGracePeriod deletion was not exercised"
fi
k delete pdb -n web web-hold >/dev/null
check "its moto instance $victim_id is terminated" state_in "$victim_id" terminated shutting-down
check "its Node $victim_node is gone" bash -c "! kubectl --kubeconfig $KUBECONFIG get node $victim_node 2>/dev/null"
wait_for 120 count_is 6 running_pods web
check "its pods run again elsewhere (6 Running)" count_is 6 running_pods web

# ---- 3. garbage collection of a stray instance ------------------------------------------------
echo "== a stray instance tagged for a NodeClaim that does not exist"
stray=$(awspy <<PY
sub = json.loads('$subnets')[0]
r = ec2.run_instances(ImageId='$ami', InstanceType='m5.large', MinCount=1, MaxCount=1, SubnetId=sub,
    TagSpecifications=[{'ResourceType': 'instance', 'Tags': [
        {'Key': 'kubernetes.io/cluster/$CLUSTER_NAME', 'Value': 'owned'},
        {'Key': 'adze.sh/nodepool', 'Value': 'general'}, {'Key': 'adze.sh/nodeclaim', 'Value': 'ghost'}]}])
print(r['Instances'][0]['InstanceId'])
PY
)
t0=$(now)
wait_for 90 state_in "$stray" terminated
echo "stray instance $stray: $(instance_state "$stray") after $(elapsed "$t0" "$(now)") s (grace 10 s)"
check "the stray instance is terminated by garbage collection" state_in "$stray" terminated
check "the provisioner logged why (an instance no NodeClaim owns, $stray)" bash -c "grep 'terminating an instance no NodeClaim owns' '$dir/provisioner.log' | grep -q '$stray'"

# ---- 4. an EventBridge spot interruption through SQS -----------------------------------------
echo "== spot interruption message in SQS"
claims_before=$(k get nodeclaims -o jsonpath='{.items[*].metadata.name}')
# new_claims: NodeClaims made since the interruption message (by name: the interrupted one may
# be gone by then, drained as soon as its replacement launched).
new_claims() { kj nodeclaims | jq -r --arg old " $claims_before " '.items[].metadata.name | select(. as $n | $old | contains(" \($n) ") | not)'; }
target=$(kj nodeclaims | jq -r '[.items[] | select(.status.nodeName != null)][0].metadata.name')
target_id=$(k get nodeclaim "$target" -o jsonpath='{.status.providerID}' | sed 's#.*/##')
target_node=$(k get nodeclaim "$target" -o jsonpath='{.status.nodeName}')
on_target=$(k get pods -n web --field-selector spec.nodeName="$target_node" -o name | wc -l)
# First the same warning as another account would send it: the provisioner checks each event's
# account (from the queue URL) and region, drops it and counts it, and the NodeClaim stays as it is.
awspy <<PY
url = sqs.get_queue_url(QueueName='$QUEUE')['QueueUrl']
t = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
sqs.send_message(QueueUrl=url, MessageBody=json.dumps({
    'version': '0', 'id': 'e2e-foreign', 'detail-type': 'EC2 Spot Instance Interruption Warning', 'source': 'aws.ec2',
    'account': '210987654321', 'time': t, 'region': 'us-east-1', 'resources': ['arn:aws:ec2:us-east-1b:instance/$target_id'],
    'detail': {'instance-id': '$target_id', 'instance-action': 'terminate'}}))
PY
foreign_metric() { local body; body=$(curl -fsS "$url/metrics") && grep -qx 'adze_interruption_messages_total{result="foreign"} 1' <<<"$body"; }
wait_for 30 foreign_metric
check "/metrics: the other account's event counted as adze_interruption_messages_total{result=\"foreign\"} 1" foreign_metric
check "the provisioner logged why it dropped it" grep -q "dropping an interruption event of another account or region" "$dir/provisioner.log"
not_interrupted() { k get nodeclaim "$target" -o json | jqe '[.status.conditions[]? | select(.type=="Interrupted")] | length == 0'; }
check "NodeClaim $target is not Interrupted by the other account's event" not_interrupted
t0=$(now)
awspy <<PY
url = sqs.get_queue_url(QueueName='$QUEUE')['QueueUrl']
t = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())
sqs.send_message(QueueUrl=url, MessageBody=json.dumps({
    'version': '0', 'id': 'e2e-1', 'detail-type': 'EC2 Spot Instance Interruption Warning', 'source': 'aws.ec2',
    'account': '123456789012', 'time': t, 'region': 'us-east-1', 'resources': ['arn:aws:ec2:us-east-1b:instance/$target_id'],
    'detail': {'instance-id': '$target_id', 'instance-action': 'terminate'}}))
PY
interrupted() {
  k get nodeclaim "$target" -o json | jqe '.status.conditions[]? | select(.type=="Interrupted" and .status=="True" and .reason=="SpotInterruption")'
}
# Observed when it happens: the claim may be drained and gone by the time the checks run.
wait_for 30 interrupted; was_interrupted=$?; t_int=$(now)
has_new_claim() { [[ -n "$(new_claims)" ]]; }
wait_for 60 has_new_claim; t_repl=$(now)
echo "message -> NodeClaim $target Interrupted: $(elapsed "$t0" "$t_int") s; -> replacement NodeClaim: $(elapsed "$t0" "$t_repl") s ($on_target pods on $target_node)"
check "NodeClaim $target of instance $target_id is Interrupted=True (SpotInterruption)" test "$was_interrupted" = 0
replacement=$(new_claims | head -n 1)
check "a replacement NodeClaim is created ($replacement)" test -n "$replacement"
left=$(awspy <<PY
url = sqs.get_queue_url(QueueName='$QUEUE')['QueueUrl']
a = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'])['Attributes']
print(int(a['ApproximateNumberOfMessages']) + int(a['ApproximateNumberOfMessagesNotVisible']))
PY
)
check "the interruption message was consumed and deleted from the queue ($left left)" test "$left" = 0
# The body is read whole before grep: `curl | grep -q` under pipefail fails when grep stops
# reading early (curl: (23) Failed writing body) on a /metrics page larger than a pipe buffer.
acted_metric() { local body; body=$(curl -fsS "$url/metrics") && grep -qx 'adze_interruption_messages_total{result="acted"} 1' <<<"$body"; }
wait_for 10 acted_metric
check "/metrics: adze_interruption_messages_total{result=\"acted\"} 1" acted_metric
replacement_initialized() {
  k get nodeclaim "$replacement" -o json | jqe '.status.providerID != null
    and any(.status.conditions[]?; .type=="Registered" and .status=="True")
    and any(.status.conditions[]?; .type=="Initialized" and .status=="True")' >/dev/null
}
wait_for 120 replacement_initialized; t_repl_init=$(now)
echo "-> replacement $replacement initialized (its kubelet Ready): $(elapsed "$t0" "$t_repl_init") s"
check "the replacement $replacement launched in moto and initialized" replacement_initialized
pods_on_target() { count k get pods -n web --field-selector spec.nodeName="$target_node" -o name; }
# With the SQS path alone (no node agent on the node), the provisioner drains the node itself
# once the replacement is launched: it deletes the Interrupted NodeClaim and termination evicts.
# ADZE_E2E_AWS_EXPECT_DRAIN=0 reports instead of checking.
wait_for "${ADZE_E2E_AWS_DRAIN_WAIT:-60}" count_is 0 pods_on_target; t_drained=$(now)
echo "-> pods left on $target_node: $(pods_on_target) after $(elapsed "$t0" "$t_drained") s"
if [[ "${ADZE_E2E_AWS_EXPECT_DRAIN:-1}" == 1 ]]; then
  check "the interrupted node is drained (its $on_target pods moved)" count_is 0 pods_on_target
elif count_is 0 pods_on_target; then
  echo "NOTE: the interrupted node was drained; set ADZE_E2E_AWS_EXPECT_DRAIN=1 to gate on it"
else
  echo "NOT DRAINED (not counted): the interrupted node still runs $(pods_on_target) pods"
fi
wait_for 120 count_is 6 running_pods web
check "all 6 pods Running after the interruption" count_is 6 running_pods web

# ---- 5. Bottlerocket, and a launch EC2 refuses -------------------------------------------------
echo "== a Bottlerocket NodePool, and a NodePool whose only type EC2 refuses to launch (UnauthorizedOperation)"
k create namespace br >/dev/null
deployment br br 1 500m br | k apply -f - >/dev/null
k create namespace doomed >/dev/null
deployment doomed doomed 1 500m refused | k apply -f - >/dev/null
t0=$(now)
wait_for 150 count_is 1 running_pods br
echo "bottlerocket pod Running after $(elapsed "$t0" "$(now)") s"
check "a pod of the Bottlerocket NodePool runs on a node that joined with Bottlerocket user data" count_is 1 running_pods br
check "the registrar joined an AL2023 and a Bottlerocket node" bash -c "grep -q 'JOINED .* (al2023)' '$dir/registrar.log' && grep -q 'JOINED .* (bottlerocket)' '$dir/registrar.log'"
refused_claim() {
  kj nodeclaims | jq -r '[.items[] | select(.metadata.labels["adze.sh/nodepool"]=="refused")
    | select(any(.status.conditions[]?; .type=="Launched" and .status=="False" and .reason=="UnauthorizedOperation"))][0].metadata.name // empty'
}
wait_for 30 bash -c "[ -n \"\$(kubectl --kubeconfig $KUBECONFIG get nodeclaims -l adze.sh/nodepool=refused -o json | jq -r '[.items[] | select(any(.status.conditions[]?; .type==\"Launched\" and .status==\"False\" and .reason==\"UnauthorizedOperation\"))][0].metadata.name // empty')\" ]"
doomed_claim=$(refused_claim)
doomed_uid=$(k get nodeclaim "$doomed_claim" -o jsonpath='{.metadata.uid}' 2>/dev/null)
echo "refused NodeClaim: $doomed_claim after $(elapsed "$t0" "$(now)") s"
check "the refused NodeClaim shows Launched=False with EC2's reason (UnauthorizedOperation)" test -n "$doomed_claim"
doomed_pod=$(k get pods -n doomed -o jsonpath='{.items[0].metadata.name}')
pod_event() { k get events -n doomed --field-selector "involvedObject.name=$doomed_pod,reason=LaunchFailed" -o name | grep -q .; }
wait_for 10 pod_event
check "its pod has a LaunchFailed event naming the reason" bash -c "kubectl --kubeconfig $KUBECONFIG get events -n doomed --field-selector involvedObject.name=$doomed_pod,reason=LaunchFailed -o jsonpath='{.items[*].message}' | grep -q UnauthorizedOperation"
claim_gone_uid() { ! k get nodeclaims -o jsonpath='{.items[*].metadata.uid}' | grep -q "$doomed_uid"; }
wait_for 40 claim_gone_uid
echo "refused NodeClaim gone after $(elapsed "$t0" "$(now)") s (launch timeout 20 s)"
check "the refused NodeClaim is deleted after the launch timeout, its pod planned again" claim_gone_uid
check "the provisioner says why it gave up (launch_timeout)" grep -q "not launched within 20s" "$dir/provisioner.log"
create_calls=$(grep -c "CreateFleet launches\|CreateFleet with a known client token" "$dir/proxy.txt")
echo "CreateFleet calls answered with an instance: $create_calls"
k delete namespace doomed --wait=false >/dev/null
# A NodePool whose EC2NodeClass does not exist can launch nothing: its Ready condition says so.
cat <<YAML | k apply -f - >/dev/null
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: orphan}
spec:
  template:
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: missing}
YAML
orphan_ready() { k get nodepool orphan -o json | jq -r '.status.conditions[]? | select(.type == "Ready") | "\(.status) \(.reason)"'; }
wait_for 20 count_is "False NodeClassNotFound" orphan_ready
check "a NodePool whose EC2NodeClass is missing is Ready=False, NodeClassNotFound ($(orphan_ready))" count_is "False NodeClassNotFound" orphan_ready
check "... and general, whose class resolved, is Ready=True" bash -c "kubectl --kubeconfig $KUBECONFIG get nodepool general -o json | jqe '.status.conditions[] | select(.type == \"Ready\") | .status == \"True\"' >/dev/null"
k delete nodepool orphan >/dev/null

# ---- a pod with a zonal volume -------------------------------------------------------------------
echo "== a pod whose PersistentVolume lives in us-east-1b"
vol_zone=us-east-1b
k create namespace vol >/dev/null
k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: PersistentVolume
metadata: {name: e2e-aws-zonal}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  hostPath: {path: /tmp/e2e-aws-zonal}
  claimRef: {namespace: vol, name: data}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [$vol_zone]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: vol}
spec:
  storageClassName: ""
  volumeName: e2e-aws-zonal
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: vol}
spec:
  nodeSelector: {e2e-pool: general}
  terminationGracePeriodSeconds: 0
  containers:
    - name: pause
      image: registry.k8s.io/pause:3.9
      resources: {requests: {cpu: "3", memory: 1Gi}}
      volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, persistentVolumeClaim: {claimName: data}}]
YAML
t0=$(now)
wait_for 150 count_is 1 running_pods vol
vol_node=$(k get pod -n vol db -o jsonpath='{.spec.nodeName}')
vol_node_zone=$(k get node "$vol_node" -o jsonpath='{.metadata.labels.topology\.kubernetes\.io/zone}' 2>/dev/null)
echo "pod with the zonal volume Running after $(elapsed "$t0" "$(now)") s on $vol_node in $vol_node_zone"
check "the pod with a volume in $vol_zone runs on a node in $vol_zone (under a fleet that skips the cheapest pool)" \
  bash -c "[[ '$vol_node_zone' == '$vol_zone' ]] && kubectl --kubeconfig $KUBECONFIG get pod -n vol db -o jsonpath='{.status.phase}' | grep -qx Running"

# ---- 6. a capacity reservation: used before on-demand, its pods survive its end ---------------
# Moto has no reservations: aws/ci/capacity_reservations.py (loaded by moto_server.py) plays
# them as EC2 documents them. A Capacity Block of one m5.large in us-east-1a, ending in 3 hours.
echo "== a Capacity Block of 1 m5.large: used first, full, then drained ahead of its end"
t_rsv=$(now)
adze_test() { # ACTION PARAM=VALUE... : a stand-in test lever, straight to moto; prints the reservation id
  local args=(-fsS "$MOTO_URL/" -H "Authorization: AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=x"
    --data-urlencode "Action=$1" --data-urlencode "Version=2016-11-15")
  local a; shift
  for a; do args+=(--data-urlencode "$a"); done
  curl "${args[@]}" | sed -n 's:.*<capacityReservationId>\(cr-[0-9a-f]*\)</capacityReservationId>.*:\1:p'
}
block=$(adze_test AdzeTestCreateCapacityBlock InstanceType=m5.large AvailabilityZone=us-east-1a InstanceCount=1 \
  "EndDate=$(date -u -d '+3 hours' +%Y-%m-%dT%H:%M:%SZ)" TagSpecification.1.ResourceType=capacity-reservation \
  TagSpecification.1.Tag.1.Key=adze.sh/reservation TagSpecification.1.Tag.1.Value=e2e)
echo "capacity block: $block"
k apply -f - >/dev/null <<YAML
apiVersion: aws.adze.sh/v1
kind: EC2NodeClass
metadata: {name: reserved}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {adze.sh/discovery: $CLUSTER_NAME}}]
  securityGroupSelectorTerms: [{tags: {adze.sh/discovery: $CLUSTER_NAME}}]
  capacityReservationSelectorTerms: [{tags: {adze.sh/reservation: e2e}}]
  role: $CLUSTER_NAME-nodes
---
apiVersion: adze.sh/v1
kind: NodePool
metadata: {name: reserve}
spec:
  disruption: {consolidateAfter: Never}
  template:
    metadata: {labels: {e2e-pool: reserve}}
    spec:
      nodeClassRef: {group: aws.adze.sh, kind: EC2NodeClass, name: reserved}
      requirements:
        - {key: adze.sh/capacity-type, operator: In, values: [reserved, on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
  limits: {cpu: "10"}
YAML
# Disruption acts only without --disruption-dry-run: the provisioner restarts without it (and
# resolves the new class at once, not at its status loop's next turn, up to 30 s later), every
# NodePool first set to consolidateAfter: Never so that nothing but the block's end disrupts
# the nodes the later checks count. Its garbage-collection grace is 30 s: above the proxy's
# DescribeInstances lag plus the 10 s the instance sweep is reused, which at 10 s let it take
# a just-registered node's instance for gone.
for pool in general br refused; do
  k patch nodepool "$pool" --type merge -p '{"spec":{"disruption":{"consolidateAfter":"Never"}}}' >/dev/null
done
kill "$prov_pid"; wait "$prov_pid" 2>/dev/null
KUBECONFIG=$PROVISIONER_KUBECONFIG POD_NAMESPACE=$ADZE_NS "$bindir/adze-provisioner" run --cloud-provider aws --aws-endpoint "$proxy_url" --region us-east-1 \
  --cluster-name "$CLUSTER_NAME" --cluster-endpoint "$APISERVER" --cluster-ca "$(base64 -w0 "$ADZE_CA_CERT")" \
  --ssm-prefix "$SSM_PREFIX" --interruption-queue "$QUEUE" --launch-timeout 20s \
  --garbage-collection-grace 30s --metrics-addr 127.0.0.1:0 \
  >"$dir/provisioner-2.log" 2>&1 &
prov_pid=$!
wait_for 60 grep -q "polling the interruption queue" "$dir/provisioner-2.log"
check "provisioner restarted without --disruption-dry-run and leads" grep -q "polling the interruption queue" "$dir/provisioner-2.log"
block_listed() { # AVAILABLE [END]: the class's status lists the block with that many free slots (and that end)
  kj ec2nodeclass reserved | jqe --arg id "$block" --argjson n "$1" --arg until "${2:-}" \
    '[.status.capacityReservations[]? | select(.id == $id and .reservationType == "capacity-block" and .availableInstanceCount == $n
      and .endTime != null and ($until == "" or .endTime == $until))] | length == 1' >/dev/null
}
wait_for 45 block_listed 1
check "EC2NodeClass reserved lists the Capacity Block $block (1 free, its end time) from DescribeCapacityReservations" block_listed 1
k create namespace rsv >/dev/null
# 1.5 CPU: one pod per m5.large.
deployment rsv rsv 1 1500m reserve | k apply -f - >/dev/null
wait_for 150 count_is 1 running_pods rsv
node_of() { k get pod -n rsv "$1" -o jsonpath='{.spec.nodeName}'; }
first=$(k get pods -n rsv -o jsonpath='{.items[0].metadata.name}')
first_node=$(node_of "$first")
first_claim=$(k get node "$first_node" -o jsonpath='{.metadata.labels.adze\.sh/nodeclaim}' 2>/dev/null)
first_id=$(k get nodeclaim "$first_claim" -o jsonpath='{.status.providerID}' 2>/dev/null | sed 's#.*/##')
echo "first pod Running after $(elapsed "$t_rsv" "$(now)") s on $first_node ($first_claim, $first_id)"
labels_are() { # NODE CAPACITY_TYPE RESERVATION_ID (empty: none)
  k get node "$1" -o json | jqe --arg ct "$2" --arg id "$3" '.metadata.labels | .["adze.sh/capacity-type"] == $ct
    and (.["aws.adze.sh/capacity-reservation-id"] // "") == $id
    and (if $id == "" then true else .["aws.adze.sh/capacity-reservation-type"] == "capacity-block" end)' >/dev/null
}
check "the first pod's node is reserved capacity in the block (adze.sh/capacity-type=reserved, capacity-reservation-id=$block, type capacity-block)" \
  labels_are "$first_node" reserved "$block"
reservation_of() { # INSTANCE: its CapacityReservationId in EC2
  awspy <<PY
print(ec2.describe_instances(InstanceIds=['$1'])['Reservations'][0]['Instances'][0].get('CapacityReservationId', 'none'))
PY
}
block_free() {
  awspy <<PY
print(ec2.describe_capacity_reservations(CapacityReservationIds=['$block'])['CapacityReservations'][0]['AvailableInstanceCount'])
PY
}
check "its instance $first_id runs in the block (CapacityReservationId), which has 0 free slots left" \
  bash -c "[[ \$1 == '$block' && \$2 == 0 ]]" _ "$(reservation_of "$first_id")" "$(block_free)"
t0=$(now)
k scale deployment -n rsv rsv --replicas=2 >/dev/null
wait_for 150 count_is 2 running_pods rsv
second=$(k get pods -n rsv -o json | jq -r --arg f "$first" '[.items[].metadata.name | select(. != $f)][0]')
second_node=$(node_of "$second")
second_id=$(k get node "$second_node" -o jsonpath='{.spec.providerID}' | sed 's#.*/##')
echo "second pod Running after $(elapsed "$t0" "$(now)") s on $second_node ($second_id)"
check "the second pod goes on-demand (the block is full): its node is adze.sh/capacity-type=on-demand, no reservation" \
  labels_are "$second_node" on-demand ""
check "... and its instance $second_id is in no reservation" count_is none reservation_of "$second_id"
# Time passes for the block: 39 minutes before its end, Adze drains its nodes (40 minutes
# ahead; EC2 takes them from 30).
block_end=$(date -u -d '+39 minutes' +%Y-%m-%dT%H:%M:%SZ)
adze_test AdzeTestSetCapacityReservationEndDate "CapacityReservationId=$block" "EndDate=$block_end" >/dev/null
t0=$(now)
first_moved() { # the first pod Running again, on another node than the block's
  local n; n=$(k get pods -n rsv -o json | jq -r --arg old "$first_node" --arg second "$second_node" '
    [.items[] | select(.status.phase == "Running" and .metadata.deletionTimestamp == null
      and .spec.nodeName != $old and .spec.nodeName != $second)] | length')
  [[ "$n" == 1 ]]
}
wait_for 180 first_moved
echo "block's node drained and its pod Running on a replacement $(elapsed "$t0" "$(now)") s after the end moved to $block_end"
check "the provisioner drained the block's node ahead of the end, saying why" \
  bash -c "sed 's/\x1b\[[0-9;]*m//g' '$dir/provisioner-2.log' | grep -q 'capacity block ending'"
check "its pod survives the block's end: Running on a replacement node" first_moved
check "2 pods Running in rsv" count_is 2 running_pods rsv
replacement_node=$(k get pods -n rsv -o json | jq -r --arg second "$second_node" '[.items[] | select(.spec.nodeName != $second) | .spec.nodeName][0]')
check "the replacement $replacement_node is on-demand: the ending block offers no slot" labels_are "$replacement_node" on-demand ""
check "EC2NodeClass reserved lists the ending block (end $block_end) with 0 free slots" block_listed 0 "$block_end"
wait_for 30 state_in "$first_id" terminated shutting-down
check "the block's instance $first_id was terminated by Adze (before EC2's 30-minute mark)" state_in "$first_id" terminated shutting-down
check "the second pod's node was not disrupted" bash -c "[[ \$(kubectl --kubeconfig $KUBECONFIG get pod -n rsv $second -o jsonpath='{.spec.nodeName}') == '$second_node' ]]"
echo "reservation section: $(elapsed "$t_rsv" "$(now)") s"

# ---- the cloud, checked against the cluster ------------------------------------------------------
echo "== instances, NodeClaims and Nodes agree"
sleep 12   # past the first garbage-collection grace (10 s; 30 s since the restart in section 6)
awspy >"$dir/final-instances.json" <<PY
out = []
for r in ec2.describe_instances(Filters=[{'Name': 'tag:kubernetes.io/cluster/$CLUSTER_NAME', 'Values': ['owned']},
                                         {'Name': 'instance-state-name', 'Values': ['pending', 'running']}])['Reservations']:
    for i in r['Instances']:
        t = i['InstanceType']
        arch = ec2.describe_instance_types(InstanceTypes=[t])['InstanceTypes'][0]['ProcessorInfo']['SupportedArchitectures']
        out.append({'id': i['InstanceId'], 'type': t, 'zone': i['Placement']['AvailabilityZone'],
                    'arch': 'arm64' if 'arm64' in arch else 'amd64',
                    'claim': {t['Key']: t['Value'] for t in i.get('Tags', [])}.get('adze.sh/nodeclaim')})
print(json.dumps(out))
PY
kj nodeclaims >"$dir/final-claims.json"
kj nodes >"$dir/final-nodes.json"
echo "instances: $(jq -c '[.[] | "\(.claim)=\(.type)/\(.zone)"]' "$dir/final-instances.json")"
check "0 duplicate instances: no NodeClaim has two" jqe 'length >= 1 and ([group_by(.claim)[] | select(length > 1)] | length == 0)' "$dir/final-instances.json"
check "0 leaked instances: every running instance is a live NodeClaim's" jqe --slurpfile c "$dir/final-claims.json" '
  ([$c[0].items[].status.providerID // empty | split("/") | last]) as $owned | length >= 1 and all(.[]; .id as $i | $owned | index($i) != null)' "$dir/final-instances.json"
check "every Node's instance-type, zone and arch labels are its instance's" jqe --slurpfile i "$dir/final-instances.json" '
  [.items[] | select(.spec.providerID // "" | startswith("aws:///")) | . as $n | ($n.spec.providerID | split("/") | last) as $id
   | ($i[0][] | select(.id == $id)) as $inst
   | ($n.metadata.labels["node.kubernetes.io/instance-type"] == $inst.type and $n.metadata.labels["topology.kubernetes.io/zone"] == $inst.zone
      and $n.metadata.labels["kubernetes.io/arch"] == $inst.arch)] | (length > 0 and all)' "$dir/final-nodes.json"
check "every NodeClaim's labels are its instance's too" jqe --slurpfile i "$dir/final-instances.json" '
  [.items[] | select(.status.providerID) | . as $c | ($c.status.providerID | split("/") | last) as $id
   | ($i[0][] | select(.id == $id)) as $inst
   | ($c.metadata.labels["node.kubernetes.io/instance-type"] == $inst.type and $c.metadata.labels["topology.kubernetes.io/zone"] == $inst.zone)] | (length > 0 and all)' "$dir/final-claims.json"
check "no kubelet was given a node-restriction.kubernetes.io label (user data keeps it out of --node-labels)" \
  bash -c "ls '$dir'/hollow/*/args >/dev/null && absent node-restriction '$dir'/hollow/*/args"
check "the node-restriction.kubernetes.io/team label (kept out of kubelet's flags) is on every general Node" jqe '
  [.items[] | select(.metadata.labels["adze.sh/nodepool"] == "general") | .metadata.labels["node-restriction.kubernetes.io/team"] == "e2e"] | (length > 0 and all)' "$dir/final-nodes.json"
check "every Adze Node carries its zone's ID (DescribeAvailabilityZones, one per zone) and its CPU manufacturer" jqe '
  [.items[] | select(.metadata.labels["adze.sh/nodepool"] != null) | .metadata.labels] | length > 0
  and all(.[]; (.["topology.k8s.aws/zone-id"] // "" | startswith("use1-az")) and (.["aws.adze.sh/instance-cpu-manufacturer"] // "") != "")
  and (group_by(.["topology.kubernetes.io/zone"]) | all(.[]; (map(.["topology.k8s.aws/zone-id"]) | unique | length) == 1))' "$dir/final-nodes.json"
check "user data of both families accepted: no instance refused by the nodeadm/Bottlerocket/kubelet checks" absent REFUSED "$dir/registrar.log"
not_cheapest=$(grep "CreateFleet launches" "$dir/proxy.txt" | awk '{t=$5; c=$NF; sub(/\)$/, "", c); if (t != c) n++} END {print n+0}')
lagged=$(grep -c "lagging DescribeInstances" "$dir/proxy.txt")
throttled=$(grep -c "throttled" "$dir/proxy.txt")
echo "fault proxy: $not_cheapest launches off the cheapest pool, $lagged lagging DescribeInstances answers, $throttled throttled calls"
check "the unkind modes were exercised (launches off the cheapest pool, a lagging list)" test "$not_cheapest" -gt 0 -a "$lagged" -gt 0

check "provisioner still running" kill -0 "$prov_pid"
check "registrar still running" kill -0 "$reg_pid"
check "the registrar stopped the kubelet of every instance that left running (STOPPED lines)" grep -q "^[0-9:]* STOPPED " "$dir/registrar.log"
check "no hollow kubelet panicked or died of a Go runtime fatal error" bash -c "absent 'panic:|fatal error:' '$dir'/hollow/*/kubelet.log"
check "no kubelet exited before its instance left running (no GONE line)" absent ' GONE ' "$dir/registrar.log"
echo "hollow kubelets started: $(grep -c ' JOINED ' "$dir/registrar.log"); kubelet start -> its port listening, s: $(grep -o 'kubelet up in [0-9.]* s' "$dir/registrar.log" | awk '{print $4}' | tr '\n' ' ')"
check "no panics in the provisioner log" absent panicked "$dir/provisioner.log"
check "no panics in the restarted provisioner's log" absent panicked "$dir/provisioner-2.log"
echo "suite time: $(elapsed "$t_start" "$(now)") s"
rbac_audit
e2e_summary
