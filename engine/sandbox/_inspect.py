"""Ground truth over HTTP, under ``/_sandbox/`` (outside the interface's paths).

``GET /_sandbox/ground-truth``  every purchase, charge, refund, balance and request count
``GET /_sandbox/health``        market time and size
``POST /_sandbox/faults``       arm a fault (body: the fields of a scenario file's fault)
``DELETE /_sandbox/faults``     disarm every fault (scenario and armed ones)
``POST /_sandbox/feed-faults``  arm a fault of the live listing feed (a ``feed.faults`` entry)
``DELETE /_sandbox/feed-faults`` disarm every feed fault
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import ValidationError

from ._faults import Fault, FeedFault
from ._http import BadRequest, Request, Response, json_response

if TYPE_CHECKING:
    from ._sandbox import Sandbox

__all__ = ["inspect_request"]


def inspect_request(sandbox: Sandbox, request: Request) -> Response:
    if request.endpoint == "GET /_sandbox/ground-truth":
        return json_response(sandbox.ground_truth())
    if request.endpoint == "GET /_sandbox/health":
        return json_response(
            {"success": True, "now": sandbox.now(), "listings": len(sandbox.market.listings)}
        )
    if request.endpoint in ("POST /_sandbox/faults", "POST /_sandbox/feed-faults"):
        feed = request.path.endswith("feed-faults")
        try:
            body = request.json()
            fault = FeedFault.model_validate(body) if feed else Fault.model_validate(body)
        except BadRequest as exc:
            return json_response({"success": False, "msg": str(exc)}, 400)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            return json_response({"success": False, "msg": f"{where}: {first['msg']}"}, 400)
        if isinstance(fault, FeedFault):
            sandbox.feed_faults.add(fault)
        else:
            sandbox.faults.add(fault)
        return json_response({"success": True, "armed": fault.model_dump(exclude_none=True)})
    if request.endpoint in ("DELETE /_sandbox/faults", "DELETE /_sandbox/feed-faults"):
        plan = sandbox.feed_faults if request.path.endswith("feed-faults") else sandbox.faults
        disarmed = len(plan)
        plan.clear()
        return json_response({"success": True, "disarmed": disarmed})
    return json_response({"success": False, "msg": "Not found"}, 404)
