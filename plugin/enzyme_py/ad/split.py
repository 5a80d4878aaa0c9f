"""Split reverse mode (in progress)."""

from .callsite import location
from .errors import CallSiteError


def lower_split(site, gen, module):
    raise CallSiteError(f"{site.call.callee_name}: split mode is not supported yet",
                        location=location(site.call))
