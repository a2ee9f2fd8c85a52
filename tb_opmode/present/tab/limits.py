"""How much of each list the tab's payloads carry, and the sizes a request may ask for.

In: nothing. Out: named caps, one each, read by the section that trims its list (a
payload also says how many there were in all, so the tab can say "first N of M").
Each keeps the answer of a busy run small (the routes refuse one above
``routes.MAX_RESPONSE_BYTES``); where two lists of the same kind have different caps,
each cap's name says which list it is.
"""
from __future__ import annotations

__all__ = [
    "MAX_PAGE_SIZE", "DEFAULT_PAGE_SIZE", "DEFAULT_COMPARE_PAGE_SIZE", "MAX_SITES",
    "DEFAULT_SITES", "SNIPPET_CONTEXT", "MAX_GRAPHS", "MAX_FUSED_NODES_SHOWN", "WHY_SENTENCES",
    "MAX_WARNINGS", "MAX_FUNCTIONS", "MAX_PRIMITIVES", "GLANCE_ROWS", "MAX_GLANCE_NAMES",
    "MAX_UNKNOWN_GROUPS", "MAX_OUTSIDE_TABLE_PER_MODE", "MAX_DUMP_COVERAGE_OP_TYPES",
    "MAX_HOT_SPOTS", "MAX_HOT_SPOT_OP_TYPES",
]

# Rows of a page of the op table or of the comparison: the most a request may ask for,
# and what a page holds when it does not say.
MAX_PAGE_SIZE = 200
DEFAULT_PAGE_SIZE = 50
DEFAULT_COMPARE_PAGE_SIZE = 100

# The op detail: call sites per mode (most a request may ask for, and the default),
# source lines shown each side of a site's line, graphs listed, nodes a fusion names.
MAX_SITES = 50
DEFAULT_SITES = 10
SNIPPET_CONTEXT = 3
MAX_GRAPHS = 50
MAX_FUSED_NODES_SHOWN = 5
# Sentences of an explanation the detail shows as its short "why".
WHY_SENTENCES = 2

# The overview's lists.
MAX_WARNINGS = 100
MAX_FUNCTIONS = 100
MAX_PRIMITIVES = 30          # ONEDNN_VERBOSE primitive kinds
GLANCE_ROWS = 8              # op types in the answer at a glance
MAX_GLANCE_NAMES = 100       # op types named in its line of all that ran in both modes
MAX_UNKNOWN_GROUPS = 20      # reasons a kernel is unknown
# Op types the table has no row for, by profiled time: per mode in the mode totals (a
# line of a table cell), and in the dump coverage note (a paragraph of its own), which
# also lists the graph op types the dump did not count.
MAX_OUTSIDE_TABLE_PER_MODE = 20
MAX_DUMP_COVERAGE_OP_TYPES = 30

# The eager hot spots: lines of the user's code listed, op types named per line.
MAX_HOT_SPOTS = 30
MAX_HOT_SPOT_OP_TYPES = 12
