"""The sandbox's catalogue: which items exist, what they are worth, how they look.

Pure data and pure functions. Names follow the real market's ``Weapon | Skin (Exterior)``
form; Doppler and Gamma Doppler items come from ``engine/data/doppler_phases.json`` with the
phases each really has. Reference prices (``platform_price``) are derived from a hash of the
name, so the same catalogue comes out on every machine without any randomness.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = [
    "EXTERIORS",
    "GAMES",
    "CatalogueItem",
    "StickerKind",
    "build_catalogue",
    "doppler_phases",
    "exterior_of",
    "phase_multiplier",
    "sticker_kinds",
]

GAMES: tuple[str, ...] = ("csgo", "dota2", "rust", "tf2")

EXTERIORS: dict[str, tuple[str, float, float]] = {
    # code: (name in the market name, lowest float, highest float)
    "FN": ("Factory New", 0.00, 0.07),
    "MW": ("Minimal Wear", 0.07, 0.15),
    "FT": ("Field-Tested", 0.15, 0.38),
    "WW": ("Well-Worn", 0.38, 0.45),
    "BS": ("Battle-Scarred", 0.45, 1.00),
}
_EXTERIOR_BY_NAME = {name: code for code, (name, _, _) in EXTERIORS.items()}
_EXTERIOR_VALUE = {"FN": 1.0, "MW": 0.72, "FT": 0.5, "WW": 0.42, "BS": 0.36}

_IMAGE_BASE = "https://img.sandbox.invalid/economy"

# Rare phases are worth many times a common one; the numbers only need to be plausible.
_PHASE_VALUE = {
    "Phase 1": 0.95,
    "Phase 2": 1.15,
    "Phase 3": 0.9,
    "Phase 4": 1.05,
    "Ruby": 4.5,
    "Sapphire": 5.0,
    "Black Pearl": 3.2,
    "Emerald": 6.0,
}


@dataclass(frozen=True, slots=True)
class CatalogueItem:
    """One tradeable item name. ``reference`` is the platform price of its most common form,
    USD x 1000; a phase-bearing item's price per phase is ``reference * phase_multiplier``."""

    name: str
    game: str
    reference: int
    brand: str | None
    type: str | None
    exterior: str | None
    phases: tuple[str, ...]
    image: str
    collection: str | None
    popularity: float

    @property
    def float_range(self) -> tuple[float, float] | None:
        if self.exterior is None:
            return None
        _, low, high = EXTERIORS[self.exterior]
        return low, high

    @property
    def takes_stickers(self) -> bool:
        return self.game == "csgo" and self.type in {"Pistol", "Rifle", "SMG", "Sniper Rifle"}


@dataclass(frozen=True, slots=True)
class StickerKind:
    name: str
    price: int
    image: str


def exterior_of(name: str) -> str | None:
    """``"AK-47 | Redline (Field-Tested)"`` -> ``"FT"``; ``None`` without an exterior."""
    if not name.endswith(")") or "(" not in name:
        return None
    return _EXTERIOR_BY_NAME.get(name[name.rindex("(") + 1 : -1])


def phase_multiplier(phase: str | None) -> float:
    return _PHASE_VALUE.get(phase, 1.0) if phase else 1.0


@cache
def doppler_phases() -> dict[str, tuple[str, ...]]:
    """Market name -> the phases that item comes in, from the shipped reference data."""
    raw = resources.files("engine").joinpath("data/doppler_phases.json").read_text("utf-8")
    data: dict[str, dict[str, int]] = json.loads(raw)
    return {name: tuple(sorted(phases)) for name, phases in data.items()}


# (weapon, brand, type, base price in USD, skins). Real CS2 weapon and skin names.
_CSGO_WEAPONS: tuple[tuple[str, str, str, int, tuple[str, ...]], ...] = (
    (
        "AK-47",
        "rifle",
        "Rifle",
        12,
        (
            "Redline",
            "Vulcan",
            "Asiimov",
            "Bloodsport",
            "Neon Rider",
            "Slate",
            "Ice Coaled",
            "Fire Serpent",
        ),
    ),
    (
        "M4A4",
        "rifle",
        "Rifle",
        10,
        ("Asiimov", "Desolate Space", "Neo-Noir", "The Emperor", "Howl", "Temukau"),
    ),
    (
        "M4A1-S",
        "rifle",
        "Rifle",
        10,
        ("Hyper Beast", "Printstream", "Decimator", "Golden Coil", "Player Two", "Nightmare"),
    ),
    (
        "AWP",
        "sniper_rifle",
        "Sniper Rifle",
        20,
        (
            "Asiimov",
            "Hyper Beast",
            "Neo-Noir",
            "Wildfire",
            "Containment Breach",
            "Chromatic Aberration",
            "Atheris",
        ),
    ),
    ("SSG 08", "sniper_rifle", "Sniper Rifle", 3, ("Blood in the Water", "Dragonfire")),
    (
        "Desert Eagle",
        "pistol",
        "Pistol",
        6,
        ("Blaze", "Printstream", "Code Red", "Kumicho Dragon", "Ocean Drive"),
    ),
    (
        "USP-S",
        "pistol",
        "Pistol",
        5,
        ("Kill Confirmed", "Neo-Noir", "Cortex", "The Traitor", "Printstream"),
    ),
    (
        "Glock-18",
        "pistol",
        "Pistol",
        4,
        ("Water Elemental", "Vogue", "Bullet Queen", "Fade", "Neo-Noir"),
    ),
    ("P250", "pistol", "Pistol", 1, ("Asiimov", "See Ya Later", "Mehndi")),
    ("Five-SeveN", "pistol", "Pistol", 1, ("Hyper Beast", "Monkey Business")),
    ("MP9", "smg", "SMG", 1, ("Starlight Protector", "Food Chain", "Mount Fuji")),
    ("MAC-10", "smg", "SMG", 1, ("Neon Rider", "Disco Tech", "Stalker")),
    ("P90", "smg", "SMG", 1, ("Asiimov", "Death by Kitty", "Trigon")),
    ("UMP-45", "smg", "SMG", 1, ("Primal Saber", "Momentum")),
    ("XM1014", "shotgun", "Shotgun", 1, ("Tranquility", "Incinegator")),
    ("Nova", "shotgun", "Shotgun", 1, ("Hyper Beast", "Antique")),
    ("Negev", "machinegun", "Machinegun", 1, ("Mjölnir", "Power Loader")),
)

_KNIVES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("★ Karambit", 900, ("Fade", "Tiger Tooth", "Slaughter", "Crimson Web", "Lore")),
    ("★ Butterfly Knife", 1100, ("Fade", "Slaughter", "Marble Fade", "Crimson Web")),
    ("★ M9 Bayonet", 700, ("Fade", "Tiger Tooth", "Marble Fade", "Autotronic")),
    ("★ Bayonet", 450, ("Fade", "Tiger Tooth", "Lore")),
    ("★ Flip Knife", 300, ("Fade", "Tiger Tooth", "Marble Fade")),
    ("★ Huntsman Knife", 220, ("Fade", "Slaughter")),
    ("★ Falchion Knife", 180, ("Fade", "Marble Fade")),
    ("★ Shadow Daggers", 140, ("Fade", "Slaughter")),
)

_GLOVES: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("★ Sport Gloves", 600, ("Pandora's Box", "Vice", "Hedge Maze", "Superconductor")),
    ("★ Specialist Gloves", 350, ("Crimson Kimono", "Fade", "Emerald Web")),
    ("★ Driver Gloves", 250, ("King Snake", "Crimson Weave", "Lunar Weave")),
    ("★ Hand Wraps", 200, ("Cobalt Skulls", "Slaughter", "Leather")),
)

_CSGO_CASES: tuple[tuple[str, int], ...] = (
    ("Kilowatt Case", 700),
    ("Revolution Case", 450),
    ("Dreams & Nightmares Case", 1500),
    ("Recoil Case", 250),
    ("Fracture Case", 300),
)

_STICKERS: tuple[tuple[str, int], ...] = (
    ("Sticker | Titan (Holo) | Katowice 2014", 60_000_000),
    ("Sticker | iBUYPOWER | Katowice 2014", 25_000_000),
    ("Sticker | Crown (Foil)", 900_000),
    ("Sticker | Howling Dawn", 260_000),
    ("Sticker | Natus Vincere (Holo) | Katowice 2019", 40_000),
    ("Sticker | s1mple (Gold) | Stockholm 2021", 55_000),
    ("Sticker | ZywOo (Glitter) | Paris 2023", 900),
    ("Sticker | FaZe Clan | Copenhagen 2024", 60),
    ("Sticker | Battle Scarred", 30),
    ("Sticker | Flammable (Foil)", 4_000),
    ("Sticker | Clutch King", 120),
    ("Sticker | Bish (Holo)", 7_000),
    ("Sticker | Hello AK-47", 0),
)

_DOTA2: tuple[tuple[str, str, int], ...] = (
    ("Arcana", "Manifold Paradox", 30),
    ("Arcana", "Fractal Horns of Inner Abysm", 35),
    ("Arcana", "Bladeform Legacy", 25),
    ("Arcana", "Feast of Abscession", 28),
    ("Immortal", "Golden Basher Blades", 60),
    ("Immortal", "Inscribed Dragonclaw Hook", 900),
    ("Immortal", "Golden Moonfall", 45),
    ("Courier", "Unusual Golden Baby Roshan", 1200),
    ("Ward", "Inscribed Eye of the Fallen Emperor", 4),
    ("Treasure", "Treasure of the Crimson Witness", 2),
    ("Mythical", "Dark Artistry Cape", 3),
    ("Mythical", "Flowing Heart of Gambit", 2),
)

_RUST: tuple[tuple[str, str, int], ...] = (
    ("Hoodie", "Blackout Hoodie", 40),
    ("Metal Facemask", "Big Grin", 120),
    ("Metal Facemask", "Whiteout Facemask", 30),
    ("Metal Torso Plate", "Tempered Chestplate", 25),
    ("AK47u", "Alien Red", 90),
    ("AK47u", "Glory AK47", 45),
    ("Mp5", "Tempered Mp5", 20),
    ("Thompson", "Punk Rock Thompson", 6),
    ("Sheet Metal Door", "Neon Door", 5),
    ("Wooden Door", "Haunted Wooden Door", 2),
    ("Boots", "Punishment Boots", 8),
    ("Pants", "Blackout Pants", 15),
)

_TF2: tuple[tuple[str | None, str, int], ...] = (
    ("key", "Mann Co. Supply Crate Key", 2),
    ("pass", "Tour of Duty Ticket", 1),
    ("rifle", "Strange Sniper Rifle", 1),
    ("Rocket Launcher", "Strange Australium Rocket Launcher", 55),
    ("Rocket Launcher", "Strange Rocket Launcher", 1),
    ("shotgun", "Strange Professional Killstreak Scattergun", 12),
    (None, "Unusual Team Captain", 300),
    (None, "Burning Flames Team Captain", 2400),
)


def _name_hash(name: str) -> int:
    return zlib.crc32(name.encode("utf-8"))


def _image(name: str) -> str:
    return f"{_IMAGE_BASE}/{_name_hash(name):08x}.png"


def _spread(name: str, usd: float) -> int:
    """A base price in dollars -> a name-specific reference, USD x 1000, between 0.5x and
    3x the base, the same on every run."""
    factor = 0.5 + (_name_hash(name) % 2500) / 1000.0
    return max(30, round(usd * factor * 1000))


def _popularity(name: str, reference: int) -> float:
    # Cheap items are listed far more often than expensive ones, as on the real market.
    # A long tail: a few names are listed hundreds of times, most a handful of times.
    rank = (_name_hash(name) >> 8) % 150
    weight: float = 40.0 / (1.0 + rank) ** 0.9 / (1.0 + reference / 50_000) ** 0.5
    return weight


def _item(
    name: str,
    game: str,
    usd: float,
    brand: str | None,
    type_: str | None,
    collection: str | None = None,
    phases: tuple[str, ...] = (),
) -> CatalogueItem:
    exterior = exterior_of(name) if game == "csgo" else None
    value = _EXTERIOR_VALUE.get(exterior, 1.0) if exterior else 1.0
    reference = _spread(name, usd * value)
    return CatalogueItem(
        name=name,
        game=game,
        reference=reference,
        brand=brand,
        type=type_,
        exterior=exterior,
        phases=phases,
        image=_image(name),
        collection=collection,
        popularity=_popularity(name, reference),
    )


def _csgo_items() -> list[CatalogueItem]:
    items: list[CatalogueItem] = []
    for weapon, brand, type_, usd, skins in _CSGO_WEAPONS:
        for skin in skins:
            for code in EXTERIORS:
                exterior = EXTERIORS[code][0]
                name = f"{weapon} | {skin} ({exterior})"
                items.append(_item(name, "csgo", usd, brand, type_, "The Sandbox Collection"))
                if _name_hash(name) % 3 == 0:
                    st_name = f"StatTrak™ {name}"
                    items.append(_item(st_name, "csgo", usd * 2.5, brand, type_))
    for group, type_, brand in ((_KNIVES, "Knife", "knife"), (_GLOVES, "Gloves", "gloves")):
        for weapon, base_usd, skins in group:
            for skin in skins:
                for code in ("FN", "MW", "FT"):
                    name = f"{weapon} | {skin} ({EXTERIORS[code][0]})"
                    items.append(_item(name, "csgo", base_usd, brand, type_))
    for name, phases in doppler_phases().items():
        doppler_usd: float = 350.0 if name.startswith("★") else 40.0
        brand, type_ = ("knife", "Knife") if name.startswith("★") else ("pistol", "Pistol")
        items.append(_item(name, "csgo", doppler_usd, brand, type_, phases=phases))
    for name, cents in _CSGO_CASES:
        items.append(_item(name, "csgo", cents / 100, "key", "Container"))
    return items


def _other_games() -> list[CatalogueItem]:
    items: list[CatalogueItem] = []
    for type_, name, usd in _DOTA2:
        items.append(_item(name, "dota2", usd, None, type_))
    for brand, name, usd in _RUST:
        items.append(_item(name, "rust", usd, brand, brand))
    for tf2_brand, name, usd in _TF2:
        tf2_type = tf2_brand.title() if tf2_brand else "Cosmetic"
        items.append(_item(name, "tf2", usd, tf2_brand, tf2_type))
    return items


@cache
def build_catalogue() -> tuple[CatalogueItem, ...]:
    """Every item name the sandbox market lists, csgo first."""
    items = _csgo_items() + _other_games()
    names = [item.name for item in items]
    assert len(names) == len(set(names)), "catalogue names must be unique"
    return tuple(items)


@cache
def sticker_kinds() -> tuple[StickerKind, ...]:
    return tuple(StickerKind(name, price, _image(name)) for name, price in _STICKERS)
