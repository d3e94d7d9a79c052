"""Numbers as the pages print them."""

from django import template

register = template.Library()


@register.filter
def pvalue(value) -> str:
    """A p-value for people: "—" when there is none, "< 0.0001" below it (never "0.0000"), else
    four decimals."""
    if value is None or value == "":
        return "—"
    try:
        p = float(value)
    except (TypeError, ValueError):
        return "—"
    if p != p:  # NaN
        return "—"
    return "< 0.0001" if p < 0.0001 else f"{p:.4f}"
