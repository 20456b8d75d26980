#!/usr/bin/env python3
"""Plays the kubelets of e2e/aws.sh: moto launches instances but nothing boots on them.

Every 0.5 s:
  * each running moto instance of the cluster tagged with a NodeClaim gets a Node, as its
    kubelet would register it: providerID aws:///ZONE/INSTANCE-ID, the well-known labels,
    capacity/allocatable of its NodeClaim, Ready, and the not-ready taint the apiserver adds
    on creation removed;
  * a pod bound to one of those Nodes is moved to Running/Ready; a terminating one is deleted
    (grace 0), as the kubelet does once its containers stopped.
A Node is registered once per instance: if Adze deletes it later, it stays deleted (a real
node's kubelet stops with its instance).

Environment: APISERVER, ADZE_TOKEN, ADZE_CA_CERT (from the harness env file), MOTO_URL,
CLUSTER_NAME. Runs with the moto venv's python (boto3 and requests come with moto).
"""
import datetime
import os
import sys
import time

import boto3
import requests

api = os.environ["APISERVER"].rstrip("/")
cluster = os.environ["CLUSTER_NAME"]
http = requests.Session()
http.trust_env = False  # REQUESTS_CA_BUNDLE and proxies of the environment must not apply
http.headers["Authorization"] = "Bearer " + os.environ["ADZE_TOKEN"]
http.verify = os.environ["ADZE_CA_CERT"]
ec2 = boto3.client(
    "ec2",
    endpoint_url=os.environ["MOTO_URL"],
    region_name=os.environ.get("AWS_REGION", "us-east-1"),
    aws_access_key_id="testing",
    aws_secret_access_key="testing",
)
registered = {}  # instance id -> node name
ours = set()  # node names this registrar created


def log(msg):
    print(time.strftime("%H:%M:%S"), msg, flush=True)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge_patch(path, body):
    r = http.patch(api + path, json=body, headers={"Content-Type": "application/merge-patch+json"})
    r.raise_for_status()
    return r.json()


def instances():
    out = []
    pages = ec2.get_paginator("describe_instances").paginate(
        Filters=[
            {"Name": f"tag:kubernetes.io/cluster/{cluster}", "Values": ["owned"]},
            {"Name": "tag-key", "Values": ["adze.sh/nodeclaim"]},
            {"Name": "instance-state-name", "Values": ["running"]},
        ]
    )
    for page in pages:
        for res in page["Reservations"]:
            out.extend(res["Instances"])
    return out


def register(inst):
    iid = inst["InstanceId"]
    tags = {t["Key"]: t["Value"] for t in inst.get("Tags", [])}
    claim_name = tags["adze.sh/nodeclaim"]
    r = http.get(f"{api}/apis/adze.sh/v1/nodeclaims/{claim_name}")
    if r.status_code == 404:
        return  # a stray instance: no NodeClaim, no node (its kubelet could not join)
    r.raise_for_status()
    status = r.json().get("status") or {}
    if "capacity" not in status:
        return  # not launched yet in the claim's status; next round
    zone = inst["Placement"]["AvailabilityZone"]
    name = inst.get("PrivateDnsName") or iid
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": inst["InstanceType"],
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": zone[:-1],
            },
        },
        "spec": {"providerID": f"aws:///{zone}/{iid}"},
    }
    r = http.post(api + "/api/v1/nodes", json=node)
    if r.status_code != 409:
        r.raise_for_status()
    t = now()
    merge_patch(
        f"/api/v1/nodes/{name}/status",
        {
            "status": {
                "capacity": status["capacity"],
                "allocatable": status.get("allocatable", status["capacity"]),
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "registered by e2e/aws-registrar.py",
                        "lastHeartbeatTime": t,
                        "lastTransitionTime": t,
                    }
                ],
                "addresses": [{"type": "InternalIP", "address": inst.get("PrivateIpAddress", "10.0.0.1")}],
                "nodeInfo": {
                    "architecture": "amd64",
                    "operatingSystem": "linux",
                    "kubeletVersion": "v1.20.2",
                    "kubeProxyVersion": "v1.20.2",
                    "osImage": "moto",
                    "kernelVersion": "",
                    "containerRuntimeVersion": "",
                    "bootID": iid,
                    "machineID": iid,
                    "systemUUID": iid,
                },
            }
        },
    )
    # TaintNodesByCondition put node.kubernetes.io/not-ready on the new Node; a Ready kubelet
    # sees it lifted by the node lifecycle controller, which the harness does not run.
    for _ in range(5):
        cur = http.get(f"{api}/api/v1/nodes/{name}").json()
        taints = (cur.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t["key"] != "node.kubernetes.io/not-ready"]
        if kept == taints:
            break
        r = http.patch(
            f"{api}/api/v1/nodes/{name}",
            json={"metadata": {"resourceVersion": cur["metadata"]["resourceVersion"]}, "spec": {"taints": kept}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        if r.status_code != 409:
            r.raise_for_status()
            break
    registered[iid] = name
    ours.add(name)
    log(f"registered node {name} for instance {iid} ({inst['InstanceType']}, {zone}) of NodeClaim {claim_name}")


def ready(pod):
    st = pod.get("status") or {}
    return st.get("phase") == "Running" and any(
        c["type"] == "Ready" and c["status"] == "True" for c in st.get("conditions") or []
    )


def pods():
    r = http.get(api + "/api/v1/pods")
    r.raise_for_status()
    for pod in r.json()["items"]:
        node = (pod.get("spec") or {}).get("nodeName")
        if node not in ours:
            continue
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        if pod["metadata"].get("deletionTimestamp"):
            r = http.delete(
                f"{api}/api/v1/namespaces/{ns}/pods/{name}",
                json={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0},
            )
            if r.status_code not in (200, 404, 409):
                r.raise_for_status()
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or ready(pod):
            continue
        t = now()
        cond = lambda ty: {"type": ty, "status": "True", "lastTransitionTime": t}
        merge_patch(
            f"/api/v1/namespaces/{ns}/pods/{name}/status",
            {
                "status": {
                    "phase": "Running",
                    "startTime": t,
                    "hostIP": "10.0.0.1",
                    "podIP": "10.0.0.2",
                    "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")],
                }
            },
        )


def main():
    log(f"registrar for cluster {cluster}: moto {os.environ['MOTO_URL']}, apiserver {api}")
    while True:
        try:
            for inst in instances():
                if inst["InstanceId"] not in registered:
                    register(inst)
            pods()
        except Exception as e:  # keep playing the kubelets; the suite's checks catch real trouble
            log(f"round failed: {e!r}")
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
