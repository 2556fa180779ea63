"""Ground truth over HTTP, under ``/_sandbox/`` (outside the interface's paths).

``GET /_sandbox/ground-truth``  every purchase, charge, refund, balance and request count
``GET /_sandbox/health``        market time and size
``POST /_sandbox/faults``       arm a fault (body: the fields of a scenario file's fault)
``DELETE /_sandbox/faults``     disarm every fault (scenario and armed ones)
``POST /_sandbox/feed-faults``  arm a fault of the live listing feed (a ``feed.faults`` entry)
``DELETE /_sandbox/feed-faults`` disarm every feed fault
``POST /_sandbox/listings``     plant a listing now (body: ``name``, and ``price`` in USD x
                                1000 or ``discount`` in percent under the platform price,
                                optional ``float``): a deal on demand for tests run from
                                outside, instead of waiting for the arrival process
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ._faults import Fault, FeedFault
from ._http import BadRequest, Request, Response, json_response

if TYPE_CHECKING:
    from ._sandbox import Sandbox

__all__ = ["inspect_request"]

_M = TypeVar("_M", bound=BaseModel)


class PlantRequest(BaseModel):
    """The body of ``POST /_sandbox/listings``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    price: int | None = Field(default=None, ge=1)
    """USD x 1000, like every price of the interface; or else ``discount``."""
    discount: int | None = Field(default=None, ge=1, le=99)
    """Percent under the item's platform price (a deal without knowing the price)."""
    float_value: float | None = Field(default=None, ge=0.0, le=1.0, alias="float")

    @model_validator(mode="after")
    def _one_price(self) -> PlantRequest:
        if (self.price is None) == (self.discount is None):
            raise ValueError("give exactly one of price and discount")
        return self


def inspect_request(sandbox: Sandbox, request: Request) -> Response:
    if request.endpoint == "GET /_sandbox/ground-truth":
        return json_response(sandbox.ground_truth())
    if request.endpoint == "GET /_sandbox/health":
        return json_response(
            {"success": True, "now": sandbox.now(), "listings": len(sandbox.market.listings)}
        )
    if request.endpoint in ("POST /_sandbox/faults", "POST /_sandbox/feed-faults"):
        feed = request.path.endswith("feed-faults")
        fault: FeedFault | Fault | Response = (
            _body(request, FeedFault) if feed else _body(request, Fault)
        )
        if isinstance(fault, Response):
            return fault
        if isinstance(fault, FeedFault):
            sandbox.feed_faults.add(fault)
        else:
            sandbox.faults.add(fault)
        return json_response({"success": True, "armed": fault.model_dump(exclude_none=True)})
    if request.endpoint == "POST /_sandbox/listings":
        return _plant(sandbox, request)
    if request.endpoint in ("DELETE /_sandbox/faults", "DELETE /_sandbox/feed-faults"):
        plan = sandbox.feed_faults if request.path.endswith("feed-faults") else sandbox.faults
        disarmed = len(plan)
        plan.clear()
        return json_response({"success": True, "disarmed": disarmed})
    return json_response({"success": False, "msg": "Not found"}, 404)


def _body(request: Request, model: type[_M]) -> _M | Response:
    """The request's JSON body as ``model``, or a 400 naming the field."""
    try:
        return model.model_validate(request.json())
    except BadRequest as exc:
        return json_response({"success": False, "msg": str(exc)}, 400)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        msg = f"{where}: {first['msg']}" if where else str(first["msg"])
        return json_response({"success": False, "msg": msg}, 400)


def _plant(sandbox: Sandbox, request: Request) -> Response:
    plant = _body(request, PlantRequest)
    if isinstance(plant, Response):
        return plant
    item = sandbox.market.items_by_name.get(plant.name)
    if item is None:
        msg = f"name: not in the sandbox's catalogue: {plant.name!r}"
        return json_response({"success": False, "msg": msg}, 400)
    sandbox.advance()
    price = plant.price or max(1, item.reference * (100 - (plant.discount or 0)) // 100)
    listing = sandbox.market.plant(item, price, float_value=plant.float_value)
    planted = {
        "success": True,
        "item_id": str(listing.item_id),
        "price": price,
        "platform_price": item.reference,
        "listed_at": listing.listed_at,
    }
    return json_response(planted)
