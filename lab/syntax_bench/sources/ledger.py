"""A small inventory ledger: items, stock movements and reports."""
from dataclasses import dataclass, field


@dataclass
class Item:
    sku: str
    name: str
    price_cents: int
    quantity: int = 0
    tags: list = field(default_factory=list)


class LedgerError(Exception):
    pass


class Ledger:
    def __init__(self, currency="EUR"):
        self.currency = currency
        self.items = {}
        self.history = []

    def add_item(self, sku, name, price_cents):
        if sku in self.items:
            raise LedgerError(f"duplicate sku {sku}")
        if price_cents < 0:
            raise LedgerError("price must not be negative")
        item = Item(sku, name, price_cents)
        self.items[sku] = item
        self.history.append(("add", sku, 0))
        return item

    def receive(self, sku, count):
        item = self._lookup(sku)
        if count <= 0:
            raise LedgerError("count must be positive")
        item.quantity += count
        self.history.append(("receive", sku, count))

    def ship(self, sku, count):
        item = self._lookup(sku)
        if count > item.quantity:
            raise LedgerError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= count
        self.history.append(("ship", sku, count))
        return item.quantity

    def _lookup(self, sku):
        try:
            return self.items[sku]
        except KeyError:
            raise LedgerError(f"unknown sku {sku}") from None

    def value(self):
        total = 0
        for item in self.items.values():
            total += item.price_cents * item.quantity
        return total

    def low_stock(self, threshold=5):
        result = []
        for sku, item in sorted(self.items.items()):
            if item.quantity < threshold and item.price_cents > 0:
                result.append(sku)
        return result

    def movements(self, sku):
        return [entry for entry in self.history if entry[1] == sku]

    def tag(self, sku, *tags):
        item = self._lookup(sku)
        for tag in tags:
            if tag not in item.tags:
                item.tags.append(tag.lower())
        return list(item.tags)

    def by_tag(self, tag):
        found = []
        for item in self.items.values():
            if tag in item.tags:
                found.append(item.sku)
        return sorted(found)


def format_cents(cents, currency="EUR"):
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    whole, rest = divmod(cents, 100)
    return f"{sign}{whole}.{rest:02d} {currency}"


def report(ledger, width=40):
    lines = []
    header = "Inventory report".center(width, "=")
    lines.append(header)
    for sku in sorted(ledger.items):
        item = ledger.items[sku]
        left = f"{item.sku} {item.name}"
        right = format_cents(item.price_cents * item.quantity, ledger.currency)
        padding = max(1, width - len(left) - len(right))
        lines.append(left + " " * padding + right)
    lines.append("-" * width)
    lines.append(format_cents(ledger.value(), ledger.currency).rjust(width))
    return "\n".join(lines)


def restock_plan(ledger, target, budget_cents):
    plan = {}
    remaining = budget_cents
    for sku in ledger.low_stock(target):
        item = ledger.items[sku]
        wanted = target - item.quantity
        if item.price_cents == 0:
            continue
        affordable = min(wanted, remaining // item.price_cents)
        if affordable <= 0:
            break
        plan[sku] = affordable
        remaining -= affordable * item.price_cents
    return plan, remaining


def merge_ledgers(first, second):
    merged = Ledger(first.currency)
    for source in (first, second):
        for sku, item in source.items.items():
            if sku not in merged.items:
                merged.add_item(sku, item.name, item.price_cents)
            merged.receive(sku, item.quantity) if item.quantity else None
    return merged


def parse_movement(line):
    parts = line.strip().split(",")
    if len(parts) != 3:
        raise ValueError(f"expected 3 fields, got {len(parts)}")
    kind, sku, count = parts
    if kind not in ("receive", "ship"):
        raise ValueError(f"unknown movement {kind!r}")
    return kind, sku.strip(), int(count)


def replay(ledger, lines):
    applied = 0
    errors = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            kind, sku, count = parse_movement(line)
            getattr(ledger, kind)(sku, count)
            applied += 1
        except (ValueError, LedgerError) as error:
            errors.append((number, str(error)))
    return applied, errors
