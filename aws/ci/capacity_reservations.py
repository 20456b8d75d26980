"""EC2 Capacity Reservations for moto, which has none: test support, loaded by moto_server.py.

moto 5.2.5 has no DescribeCapacityReservations and ignores a launch template's
CapacityReservationSpecification, so nothing Adze does with reservations could be run against
it. This module adds, to moto's EC2 backend, reservations that behave as EC2 documents them:

* CreateCapacityReservation (an ODCR: `default` type), DescribeCapacityReservations (ids,
  filters, MaxResults/NextToken pages; an unknown filter, id or page size refused as EC2
  refuses it) and CancelCapacityReservation (refused for a Capacity Block, as EC2 does).
* States follow the clock: `scheduled` before a Capacity Block's start, `active`, `expired` from
  `EndDate`, `cancelled`. Only an active reservation has available instances. When an ODCR
  ends, its instances keep running unreserved; EC2 terminates a Capacity Block's instances from
  30 minutes before its end, and so does this (checked on every EC2 call).
* Launches (CreateFleet, as Adze launches) read the launch template: a targeted reservation
  takes the instance only if it is active, of the same type and zone, and has a free slot;
  otherwise the fleet answers `ReservationCapacityExceeded` for that override, EC2's code for a
  targeted reservation without "sufficient compatible and available capacity", and launches
  nothing. A Capacity Block also needs the `capacity-block` market type. An untargeted launch
  (preference `open`, the default) lands in a matching `open` ODCR with a free slot, as EC2's
  open matching does. The instance carries `CapacityReservationId`; terminating it gives the
  slot back. RunInstances is left as moto has it (Adze launches only through CreateFleet).

Every reservation is described with `Interruptible` (false unless a lever says otherwise), as
EC2 describes one whose owner may take its capacity back.

Three test levers EC2 has no equivalent for (its Capacity Blocks are bought from offerings that
start on a schedule and last days, no clock can be moved, and an interruptible reservation is
made by another account's owner from its own reservation): `AdzeTestCreateCapacityBlock`
(InstanceType, AvailabilityZone, InstanceCount, EndDate, optional StartDate and
TagSpecification), `AdzeTestSetCapacityReservationEndDate` (CapacityReservationId, EndDate:
time passing for one reservation) and `AdzeTestSetCapacityReservationInterruptible`
(CapacityReservationId, Interruptible `true`/`false`). All are EC2 query actions on the same
endpoint, so they pass the fault proxy like any call; all answer `<capacityReservationId>`.
"""

import datetime
import random

from moto.core.responses import ActionResult
from moto.core.utils import utcnow
from moto.ec2.exceptions import EC2ClientError
from moto.ec2.models.fleets import Fleet
from moto.ec2.models.instances import InstanceBackend
from moto.ec2.responses import EC2Response

# EC2 terminates a Capacity Block's instances from this long before its end.
BLOCK_TERMINATION_LEAD = datetime.timedelta(minutes=30)

FILTERS = {
    "capacity-reservation-id",
    "instance-type",
    "owner-id",
    "availability-zone",
    "availability-zone-id",
    "instance-platform",
    "tenancy",
    "state",
    "start-date",
    "end-date",
    "end-date-type",
    "instance-match-criteria",
    "placement-group-arn",
    "ebs-optimized",
    "tag-key",
}


def _now():
    return utcnow().replace(tzinfo=datetime.timezone.utc)


def _parse_date(text, name):
    try:
        d = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        raise EC2ClientError("InvalidParameterValue", f"{name} {text!r} is not a date")
    return d if d.tzinfo else d.replace(tzinfo=datetime.timezone.utc)


class Reservation:
    def __init__(self, backend, instance_type, zone, count, end, match, kind, start, tags):
        self.id = "cr-" + "".join(random.choice("0123456789abcdef") for _ in range(17))
        self.owner_id = backend.account_id
        self.region = backend.region_name
        self.instance_type = instance_type
        self.zone = zone
        self.zone_id = _zone_id(backend, zone)
        self.total = count
        self.end = end
        self.match = match
        self.kind = kind
        self.start = start
        self.created = _now()
        self.cancelled = False
        self.tags = dict(tags)
        self.instances = set()
        self.interruptible = False

    def state(self, now):
        if self.cancelled:
            return "cancelled"
        if self.end is not None and now >= self.end:
            return "expired"
        if now < self.start:
            return "scheduled"
        return "active"

    def available(self, now):
        if self.state(now) != "active":
            return 0
        return max(self.total - len(self.instances), 0)

    def described(self, now):
        out = {
            "CapacityReservationId": self.id,
            "OwnerId": self.owner_id,
            "CapacityReservationArn": f"arn:aws:ec2:{self.region}:{self.owner_id}:capacity-reservation/{self.id}",
            "AvailabilityZoneId": self.zone_id,
            "InstanceType": self.instance_type,
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": self.zone,
            "Tenancy": "default",
            "TotalInstanceCount": self.total,
            "AvailableInstanceCount": self.available(now),
            "EbsOptimized": False,
            "EphemeralStorage": False,
            "State": self.state(now),
            "StartDate": self.start,
            "EndDateType": "limited" if self.end is not None else "unlimited",
            "InstanceMatchCriteria": self.match,
            "CreateDate": self.created,
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(self.tags.items())],
            "ReservationType": self.kind,
            "Interruptible": self.interruptible,
        }
        if self.end is not None:
            out["EndDate"] = self.end
        return out

    def matches(self, name, values, now):
        d = self.described(now)
        if name.startswith("tag:"):
            v = self.tags.get(name[4:])
            return v is not None and v in values
        if name == "tag-key":
            return any(k in values for k in self.tags)
        field = {
            "capacity-reservation-id": "CapacityReservationId",
            "instance-type": "InstanceType",
            "owner-id": "OwnerId",
            "availability-zone": "AvailabilityZone",
            "availability-zone-id": "AvailabilityZoneId",
            "instance-platform": "InstancePlatform",
            "tenancy": "Tenancy",
            "state": "State",
            "end-date-type": "EndDateType",
            "instance-match-criteria": "InstanceMatchCriteria",
            "ebs-optimized": "EbsOptimized",
        }.get(name)
        if field is None:
            return False
        return str(d[field]).lower() in [str(v).lower() for v in values]


def _zone_id(backend, zone):
    for zones in backend.zones.values():
        for z in zones:
            if z.name == zone:
                return z.zone_id
    raise EC2ClientError("InvalidParameterValue", f"Invalid availability zone: [{zone}]")


def _store(backend):
    if not hasattr(backend, "adze_capacity_reservations"):
        backend.adze_capacity_reservations = {}
    return backend.adze_capacity_reservations


def _get(backend, rid):
    if not isinstance(rid, str) or not rid.startswith("cr-"):
        raise EC2ClientError(
            "InvalidCapacityReservationId.Malformed",
            f"Invalid id: \"{rid}\" (expecting \"cr-...\")",
        )
    r = _store(backend).get(rid)
    if r is None:
        raise EC2ClientError(
            "InvalidCapacityReservationId.NotFound",
            f"The capacity reservation ID '{rid}' does not exist",
        )
    return r


def _tick(backend):
    """What EC2 does as time passes: an ended ODCR lets its instances go unreserved; a Capacity
    Block's instances are terminated from 30 minutes before its end."""
    now = _now()
    doomed = []
    for r in _store(backend).values():
        if r.kind == "capacity-block" and r.end is not None and now >= r.end - BLOCK_TERMINATION_LEAD:
            doomed.extend(r.instances)
            r.instances.clear()
        elif r.state(now) in ("expired", "cancelled") and r.instances:
            for i in backend.all_instances():
                if i.id in r.instances:
                    i.capacity_reservation_id = None
            r.instances.clear()
    if not doomed:
        return
    live = [i.id for i in backend.all_instances() if i.id in doomed and i.state != "terminated"]
    if live:
        _original_terminate(backend, live)


def _tags_from(spec_list, resource_type):
    tags = {}
    for spec in spec_list or []:
        if spec.get("ResourceType") == resource_type:
            for t in spec.get("Tags", []) or []:
                tags[t["Key"]] = t.get("Value", "")
    return tags


def _count(text):
    try:
        n = int(text)
    except (TypeError, ValueError):
        raise EC2ClientError("InvalidParameterValue", f"InstanceCount {text!r} is not a number")
    if n < 1:
        raise EC2ClientError("InvalidParameterValue", "InstanceCount must be at least 1")
    return n


def create_capacity_reservation(self):
    _tick(self.ec2_backend)
    self.error_on_dryrun()
    itype = self._get_param("InstanceType")
    zone = self._get_param("AvailabilityZone")
    if not itype or not zone or not self._get_param("InstancePlatform"):
        raise EC2ClientError(
            "MissingParameter",
            "InstanceType, InstancePlatform and AvailabilityZone are required",
        )
    count = _count(self._get_param("InstanceCount"))
    end_type = self._get_param("EndDateType") or "unlimited"
    end = self._get_param("EndDate")
    if end_type not in ("limited", "unlimited"):
        raise EC2ClientError("InvalidParameterValue", f"EndDateType {end_type!r}")
    if end_type == "limited" and end is None:
        raise EC2ClientError("InvalidParameterCombination", "EndDate is required when EndDateType is limited")
    if end_type == "unlimited" and end is not None:
        raise EC2ClientError("InvalidParameterCombination", "EndDate cannot be set when EndDateType is unlimited")
    if end is not None:
        end = end if isinstance(end, datetime.datetime) else _parse_date(end, "EndDate")
        end = end if end.tzinfo else end.replace(tzinfo=datetime.timezone.utc)
        if end <= _now():
            raise EC2ClientError("InvalidParameterValue", "EndDate must be in the future")
    match = self._get_param("InstanceMatchCriteria") or "open"
    if match not in ("open", "targeted"):
        raise EC2ClientError("InvalidParameterValue", f"InstanceMatchCriteria {match!r}")
    tags = _tags_from(self._get_param("TagSpecifications", []), "capacity-reservation")
    r = Reservation(self.ec2_backend, itype, zone, count, end, match, "default", _now(), tags)
    _store(self.ec2_backend)[r.id] = r
    return ActionResult({"CapacityReservation": r.described(_now())})


def describe_capacity_reservations(self):
    backend = self.ec2_backend
    _tick(backend)
    now = _now()
    ids = self._get_param("CapacityReservationIds", []) or []
    filters = self._get_param("Filters", []) or []
    for f in filters:
        name = f.get("Name", "")
        if name not in FILTERS and not name.startswith("tag:"):
            raise EC2ClientError("InvalidParameterValue", f"The filter '{name}' is invalid")
    max_results = self._get_param("MaxResults")
    if max_results is not None and not 1 <= int(max_results) <= 1000:
        raise EC2ClientError("InvalidParameterValue", "MaxResults must be between 1 and 1000")
    if ids:
        found = [_get(backend, i) for i in ids]
    else:
        found = sorted(_store(backend).values(), key=lambda r: r.id)
    found = [
        r for r in found
        if all(r.matches(f.get("Name", ""), f.get("Values", []) or [], now) for f in filters)
    ]
    token = self._get_param("NextToken")
    try:
        start = int(token) if token else 0
    except ValueError:
        raise EC2ClientError("InvalidPaginationToken", f"Invalid NextToken {token!r}")
    size = int(max_results) if max_results is not None else 1000
    page = found[start:start + size]
    result = {"CapacityReservations": [r.described(now) for r in page]}
    if start + size < len(found):
        result["NextToken"] = str(start + size)
    return ActionResult(result)


def cancel_capacity_reservation(self):
    _tick(self.ec2_backend)
    self.error_on_dryrun()
    r = _get(self.ec2_backend, self._get_param("CapacityReservationId"))
    if r.kind == "capacity-block":
        raise EC2ClientError("InvalidParameterValue", "You can't cancel a Capacity Block.")
    if r.state(_now()) not in ("active", "scheduled"):
        raise EC2ClientError(
            "InvalidCapacityReservationId.Unavailable",
            f"The capacity reservation '{r.id}' is {r.state(_now())}",
        )
    r.cancelled = True
    _tick(self.ec2_backend)
    return ActionResult({"Return": True})


def _query(self, name):
    v = self.querystring.get(name)
    return v[0] if v else None


def _reply(action, rid):
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<{action}Response xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
        f"<requestId>adze-test</requestId><capacityReservationId>{rid}</capacityReservationId></{action}Response>"
    )


def adze_test_create_capacity_block(self):
    _tick(self.ec2_backend)
    itype = _query(self, "InstanceType")
    zone = _query(self, "AvailabilityZone")
    end = _query(self, "EndDate")
    if not itype or not zone or not end:
        raise EC2ClientError("MissingParameter", "InstanceType, AvailabilityZone and EndDate are required")
    start = _query(self, "StartDate")
    start = _parse_date(start, "StartDate") if start else _now()
    end = _parse_date(end, "EndDate")
    if end <= start:
        raise EC2ClientError("InvalidParameterValue", "EndDate must be after StartDate")
    tags = {}
    for k, v in self.querystring.items():
        # TagSpecification.1.Tag.N.Key / .Value
        if k.startswith("TagSpecification.1.Tag.") and k.endswith(".Key"):
            tags[v[0]] = (self.querystring.get(k[: -len("Key")] + "Value") or [""])[0]
    r = Reservation(self.ec2_backend, itype, zone, _count(_query(self, "InstanceCount")), end, "targeted", "capacity-block", start, tags)
    _store(self.ec2_backend)[r.id] = r
    return _reply("AdzeTestCreateCapacityBlock", r.id)


def adze_test_set_capacity_reservation_end_date(self):
    r = _get(self.ec2_backend, _query(self, "CapacityReservationId"))
    end = _query(self, "EndDate")
    if not end:
        raise EC2ClientError("MissingParameter", "EndDate is required")
    r.end = _parse_date(end, "EndDate")
    _tick(self.ec2_backend)
    return _reply("AdzeTestSetCapacityReservationEndDate", r.id)


def adze_test_set_capacity_reservation_interruptible(self):
    r = _get(self.ec2_backend, _query(self, "CapacityReservationId"))
    value = _query(self, "Interruptible")
    if value not in ("true", "false"):
        raise EC2ClientError("InvalidParameterValue", f"Interruptible {value!r}: true or false")
    r.interruptible = value == "true"
    return _reply("AdzeTestSetCapacityReservationInterruptible", r.id)


EC2Response.create_capacity_reservation = create_capacity_reservation
EC2Response.describe_capacity_reservations = describe_capacity_reservations
EC2Response.cancel_capacity_reservation = cancel_capacity_reservation
EC2Response.adze_test_create_capacity_block = adze_test_create_capacity_block
EC2Response.adze_test_set_capacity_reservation_end_date = adze_test_set_capacity_reservation_end_date
EC2Response.adze_test_set_capacity_reservation_interruptible = (
    adze_test_set_capacity_reservation_interruptible
)


# --- the launch side -------------------------------------------------------------------------

_original_terminate = InstanceBackend.terminate_instances


def _terminate(self, instance_ids):
    out = _original_terminate(self, instance_ids)
    for r in _store(self).values():
        r.instances.difference_update(instance_ids)
    return out


InstanceBackend.terminate_instances = _terminate


def _template_data(backend, launch_spec):
    spec = launch_spec.launch_template_spec or {}
    if "LaunchTemplateId" not in spec:
        return {}
    template = backend.get_launch_template(template_id=spec["LaunchTemplateId"])
    return template.get_version(spec.get("Version", template.default_version_number)).data


def _zone_of_subnet(backend, subnet_id):
    return backend.get_subnet(subnet_id).availability_zone if subnet_id else None


def _error(launch_spec, code, message):
    overrides = dict(launch_spec.overrides or {})
    return {
        "LaunchTemplateAndOverrides": {
            "LaunchTemplateSpecification": launch_spec.launch_template_spec,
            "Overrides": overrides,
        },
        "Lifecycle": "on-demand",
        "ErrorCode": code,
        "ErrorMessage": message,
    }


_original_on_demand = Fleet.create_on_demand_requests


def _create_on_demand_requests(self, weight_to_add):
    """moto's on-demand launch, with the reservation rules applied per launch spec first."""
    backend = self.ec2_backend
    _tick(backend)
    now = _now()
    self.adze_errors = getattr(self, "adze_errors", [])
    weight_map, added_weight = self.get_launch_spec_counts(weight_to_add)
    for launch_spec, count in weight_map.items():
        data = _template_data(backend, launch_spec)
        crs = data.get("CapacityReservationSpecification") or {}
        target = (crs.get("CapacityReservationTarget") or {}).get("CapacityReservationId")
        preference = crs.get("CapacityReservationPreference") or "open"
        market = (data.get("InstanceMarketOptions") or {}).get("MarketType")
        zone = _zone_of_subnet(backend, launch_spec.subnet_id)
        into = None
        if target:
            r = _store(backend).get(target)
            if r is None:
                self.adze_errors.append(_error(launch_spec, "InvalidCapacityReservationId.NotFound",
                                               f"The capacity reservation ID '{target}' does not exist"))
                continue
            if r.kind == "capacity-block" and market != "capacity-block":
                self.adze_errors.append(_error(launch_spec, "InvalidParameterCombination",
                                               "A Capacity Block needs the capacity-block market type"))
                continue
            if r.available(now) < count or r.instance_type != launch_spec.instance_type or r.zone != zone:
                self.adze_errors.append(_error(launch_spec, "ReservationCapacityExceeded",
                                               "The requested reservation does not have sufficient compatible and available capacity for this request."))
                continue
            into = r
        elif preference == "open" and market != "capacity-block":
            into = next(
                (r for r in sorted(_store(backend).values(), key=lambda r: r.id)
                 if r.kind == "default" and r.match == "open" and r.instance_type == launch_spec.instance_type
                 and r.zone == zone and r.available(now) >= count),
                None,
            )
        reservation = backend.run_instances(
            image_id=launch_spec.image_id,
            count=count,
            instance_type=launch_spec.instance_type,
            is_instance_type_default=False,
            key_name=launch_spec.key_name,
            security_group_names=launch_spec.group_set,
            user_data=launch_spec.user_data,
            placement=None,
            kernel_id=None,
            ramdisk_id=None,
            monitoring_enabled=launch_spec.monitoring,
            subnet_id=launch_spec.subnet_id,
            fleet_id=self.id,
            tags=launch_spec.tag_specifications,
        )
        for instance in reservation.instances:
            if into is not None:
                instance.capacity_reservation_id = into.id
                into.instances.add(instance.id)
            self.on_demand_instances.append({"id": reservation.id, "instance": instance, "launch_spec": launch_spec})
    self.fulfilled_capacity += added_weight


Fleet.create_on_demand_requests = _create_on_demand_requests

_original_create_fleet = EC2Response.create_fleet


def create_fleet(self):
    result = _original_create_fleet(self)
    fleet = self.ec2_backend.get_fleet(result.result["FleetId"]) if isinstance(result, ActionResult) else None
    errors = getattr(fleet, "adze_errors", None) if fleet is not None else None
    if errors:
        result.result["Errors"] = errors
    return result


EC2Response.create_fleet = create_fleet

_original_call_action = EC2Response.call_action


def call_action(self):
    # Time passes for every EC2 call, not only reservation calls (a Capacity Block's instances
    # go at its end minus 30 minutes whoever is looking).
    try:
        _tick(self.ec2_backend)
    except Exception:  # the backend may not resolve for a malformed request; moto answers it
        pass
    return _original_call_action(self)


EC2Response.call_action = call_action

_original_parse_parameters = EC2Response.parse_parameters


def parse_parameters(self, request):
    # The test levers are not in botocore's EC2 model: they read the raw query instead.
    if self._get_action().startswith("AdzeTest"):
        self.params = {}
        return
    _original_parse_parameters(self, request)


EC2Response.parse_parameters = parse_parameters
