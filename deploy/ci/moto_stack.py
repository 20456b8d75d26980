"""Deploys deploy/aws/adze.yaml into moto's CloudFormation and checks what it made: the
interruption queue, the four EventBridge rules aimed at it, the node and controller roles (IRSA
trust) and the controller policy. moto skips AWS::SQS::QueuePolicy and a role's
ManagedPolicyArns, and has no AWS::EKS::PodIdentityAssociation: the queue policy, the
attachment and the Pod Identity trust are checked statically (aws/tests/iam_policy.rs).
Run with moto's Python (boto3, PyYAML) and ADZE_AWS_ENDPOINT set (aws/ci/moto-server.sh).
Usage: moto_stack.py TEMPLATE
"""

import json
import os
import sys

import boto3
import yaml

CLUSTER = "ci"
OIDC = "oidc.eks.us-east-1.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"


def for_moto(template):
    """moto's AWS::IAM::ManagedPolicy JSON-encodes a string PolicyDocument a second time (real
    CloudFormation takes the string as the document), so hand moto the object the string stands
    for: the cluster name put into the keys, every other ${...} left to Fn::Sub."""
    policy = template["Resources"]["ControllerPolicy"]["Properties"]
    text = policy["PolicyDocument"]["Fn::Sub"].replace("${ClusterName}", CLUSTER)

    def sub(v):
        if isinstance(v, str):
            return {"Fn::Sub": v} if "${" in v else v
        if isinstance(v, list):
            return [sub(x) for x in v]
        if isinstance(v, dict):
            return {k: sub(x) for k, x in v.items()}
        return v

    policy["PolicyDocument"] = sub(json.loads(text))
    return template


def main():
    endpoint = os.environ["ADZE_AWS_ENDPOINT"]
    with open(sys.argv[1]) as f:
        template = for_moto(yaml.safe_load(f))
    client = lambda s: boto3.client(s, endpoint_url=endpoint)
    cf, sqs, events, iam = client("cloudformation"), client("sqs"), client("events"), client("iam")
    cf.create_stack(
        StackName="adze-ci",
        TemplateBody=json.dumps(template),
        Capabilities=["CAPABILITY_NAMED_IAM"],
        Parameters=[
            {"ParameterKey": "ClusterName", "ParameterValue": CLUSTER},
            {"ParameterKey": "ControllerTrust", "ParameterValue": "irsa"},
            {"ParameterKey": "OidcProvider", "ParameterValue": OIDC},
            {"ParameterKey": "NodeAccessEntry", "ParameterValue": "false"},
        ],
    )
    stack = cf.describe_stacks(StackName="adze-ci")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}

    url = sqs.get_queue_url(QueueName=CLUSTER)["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    arn = attrs["QueueArn"]
    assert attrs["MessageRetentionPeriod"] == "300", attrs
    assert outputs["InterruptionQueueName"] == CLUSTER, outputs

    wanted = {
        ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
        ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
        ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
        ("aws.ec2", "EC2 Instance State-change Notification"),
        ("aws.health", "AWS Health Event"),
    }
    seen = set()
    for rule in events.list_rules()["Rules"]:
        pattern = json.loads(rule["EventPattern"])
        targets = events.list_targets_by_rule(Rule=rule["Name"])["Targets"]
        if [t["Arn"] for t in targets] == [arn]:
            seen |= {(s, d) for s in pattern["source"] for d in pattern["detail-type"]}
    assert seen == wanted, f"rules aimed at the queue: {seen}"

    node = iam.get_role(RoleName=f"AdzeNode-{CLUSTER}")["Role"]
    assert outputs["NodeRoleName"] == node["RoleName"], outputs
    profile = iam.get_instance_profile(InstanceProfileName=outputs["NodeInstanceProfileName"])
    assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == [node["RoleName"]]

    controller = iam.get_role(RoleName=f"AdzeController-{CLUSTER}")["Role"]
    assert outputs["ControllerRoleArn"] == controller["Arn"], outputs
    trust = controller["AssumeRolePolicyDocument"]
    if isinstance(trust, str):
        trust = json.loads(trust)
    cond = trust["Statement"][0]["Condition"]["StringEquals"]
    assert cond == {
        f"{OIDC}:sub": "system:serviceaccount:adze-system:adze-provisioner",
        f"{OIDC}:aud": "sts.amazonaws.com",
    }, trust
    # moto's AWS::IAM::Role ignores ManagedPolicyArns: find the policy by name.
    [policy_arn] = [
        p["Arn"]
        for p in iam.list_policies(Scope="Local")["Policies"]
        if p["PolicyName"] == f"AdzeController-{CLUSTER}"
    ]
    version = iam.get_policy(PolicyArn=policy_arn)["Policy"]["DefaultVersionId"]
    document = iam.get_policy_version(PolicyArn=policy_arn, VersionId=version)["PolicyVersion"]
    document = document["Document"]
    if isinstance(document, str):
        document = json.loads(document)
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    assert by_sid["Interruptions"]["Resource"] == arn, by_sid["Interruptions"]
    assert by_sid["PassNodeRole"]["Resource"] == node["Arn"], by_sid["PassNodeRole"]
    assert "ec2:CreateAction" in by_sid["TagOnCreate"]["Condition"]["StringEquals"]
    # Fn::Sub put the stack's region into every regional statement's condition.
    region = arn.split(":")[3]
    for sid in ("Discover", "TerminateOwnedInstances", "Images", "ClusterSettings", "Interruptions"):
        got = by_sid[sid]["Condition"]["StringEquals"]["aws:RequestedRegion"]
        assert got == region, (sid, got, region)
    assert by_sid["TerminateOwnedInstances"]["Condition"]["Null"] == {
        "aws:ResourceTag/adze.sh/nodepool": "false",
        "aws:ResourceTag/adze.sh/nodeclaim": "false",
    }, by_sid["TerminateOwnedInstances"]
    print(f"moto_stack.py: stack adze-ci: queue, {len(seen)} rules, roles and policy as declared")


if __name__ == "__main__":
    main()
