"""Pins strategic merge patch (apply, two-way and three-way) to upstream's ``strategicpatch`` tests.

The round-trip and apply tables are ``patch_test.go``'s YAML cases verbatim (``createStrategicMergePatchTestCaseData``,
``strategicMergePatchRawTestCases``, ``customStrategicMergePatchTestCaseData``, ``TestReplaceWithRawExtension``,
``TestUnknownField``), run against upstream's ``MergeItem`` test type transcribed as a :class:`Schema`; each id is
the upstream description. The built-in cases pin the struct tags of k8s.io/api that kubectl users meet (containers by
name, ports by containerPort, atomic tolerations and taints, retainKeys on volumes and Deployment strategy). The
property pins ``apply(a, two_way(a, b)) == b`` on random pod-like documents.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.patch import PatchError
from kubeplane.api.strategicpatch import (
    create_three_way_merge_patch,
    create_two_way_merge_patch,
    strategic_merge_patch,
)
from kubeplane.api.strategicpatch_meta import BUILTIN_SCHEMA, Field, Schema

# upstream's MergeItem / RetainKeysMergeItem struct tags
MERGE_ITEM = Schema(
    {
        "MergeItem": {
            "mergingList": Field("merge", "name", "MergeItem"),
            "nonMergingList": Field("", "", "MergeItem"),
            "mergingIntList": Field("merge"),
            "mergeItemPtr": Field("merge", "name", "MergeItem"),
            "replacingItem": Field("replace"),
            "retainKeysMap": Field("retainKeys", "", "RetainKeysMergeItem"),
            "retainKeysMergingList": Field("merge,retainKeys", "name", "MergeItem"),
        },
        "RetainKeysMergeItem": {
            "mergingIntList": Field("merge"),
            "mergingList": Field("merge", "name", "MergeItem"),
            "nonMergingList": Field("", "", "MergeItem"),
        },
    },
    {("", "MergeItem"): "MergeItem"},
)
ITEM = ("", "MergeItem")
POD = ("", "Pod")


def _cases(text: str) -> list[Any]:
    return [pytest.param(case, id=case["id"]) for case in yaml.safe_load(text)]


# --- round trips: two-way patch, its application, three-way patch, its application --------------------------

ROUND_TRIP = _cases(
    """
- id: nil original
  twoWay: {name: 1, value: 1}
  modified: {name: 1, value: 1}
  current: {name: 1, other: a}
  threeWay: {value: 1}
  result: {name: 1, value: 1, other: a}
- id: nil patch
  original: {name: 1}
  twoWay: {}
  modified: {name: 1}
  current: {name: 1}
  threeWay: {}
  result: {name: 1}
- id: add field to map
  original: {name: 1}
  twoWay: {value: 1}
  modified: {name: 1, value: 1}
  current: {name: 1, other: a}
  threeWay: {value: 1}
  result: {name: 1, value: 1, other: a}
- id: add field to map with conflict
  original: {name: 1}
  twoWay: {value: 1}
  modified: {name: 1, value: 1}
  current: {name: a, other: a}
  threeWay: {name: 1, value: 1}
  result: {name: 1, value: 1, other: a}
- id: add field and delete field from map
  original: {name: 1}
  twoWay: {name: null, value: 1}
  modified: {value: 1}
  current: {name: 1, other: a}
  threeWay: {name: null, value: 1}
  result: {value: 1, other: a}
- id: delete field from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  twoWay: {simpleMap: {key2: null}}
  modified: {simpleMap: {key1: 1}}
  current: {simpleMap: {key1: 1, key2: 1, other: a}}
  threeWay: {simpleMap: {key2: null}}
  result: {simpleMap: {key1: 1, other: a}}
- id: delete field from nested map with conflict
  original: {simpleMap: {key1: 1, key2: 1}}
  twoWay: {simpleMap: {key2: null}}
  modified: {simpleMap: {key1: 1}}
  current: {simpleMap: {key1: a, key2: 1, other: a}}
  threeWay: {simpleMap: {key1: 1, key2: null}}
  result: {simpleMap: {key1: 1, other: a}}
- id: delete all fields from map
  original: {name: 1, value: 1}
  twoWay: {name: null, value: null}
  modified: {}
  current: {name: 1, value: 1, other: a}
  threeWay: {name: null, value: null}
  result: {other: a}
- id: add field and delete all fields from map with conflict
  original: {name: 1, value: 1}
  twoWay: {name: null, value: null, other: a}
  modified: {other: a}
  current: {name: 1, value: 1, other: b}
  threeWay: {name: null, value: null, other: a}
  result: {other: a}
- id: replace list of scalars with conflict
  original: {nonMergingIntList: [1, 2]}
  twoWay: {nonMergingIntList: [2, 3]}
  modified: {nonMergingIntList: [2, 3]}
  current: {nonMergingIntList: [1, 4]}
  threeWay: {nonMergingIntList: [2, 3]}
  result: {nonMergingIntList: [2, 3]}
- id: delete all maps from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  modified: {mergingList: []}
  current: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  threeWay: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- id: delete all maps from empty merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  modified: {mergingList: []}
  current: {mergingList: []}
  threeWay: {mergingList: [{name: 1, $patch: delete}, {name: 2, $patch: delete}]}
  result: {mergingList: []}
- id: merge empty merging lists
  original: {mergingList: []}
  twoWay: {}
  modified: {mergingList: []}
  current: {mergingList: []}
  threeWay: {}
  result: {mergingList: []}
- id: defined null values should propagate overwrite current fields (with conflict)
  original: {name: 2}
  twoWay: {name: 1, value: 1, other: null}
  twoWayResult: {name: 1, value: 1}
  modified: {name: 1, value: 1, other: null}
  current: {name: a, other: a}
  threeWay: {name: 1, value: 1, other: null}
  result: {name: 1, value: 1}
- id: defined null values should propagate removing original fields
  original: {name: original-name, value: original-value}
  current: {name: original-name, value: original-value, other: current-other}
  modified: {name: modified-name, value: null}
  twoWay: {name: modified-name, value: null}
  twoWayResult: {name: modified-name}
  threeWay: {name: modified-name, value: null}
  result: {name: modified-name, other: current-other}
- id: nil patch with retainKeys map
  original: {name: a, retainKeysMap: {name: foo}}
  current: {name: a, value: b, retainKeysMap: {name: foo}}
  modified: {name: a, retainKeysMap: {name: foo}}
  twoWay: {}
  threeWay: {}
  result: {name: a, value: b, retainKeysMap: {name: foo}}
- id: retainKeys map with no change should not be present
  original: {name: a, retainKeysMap: {name: foo}}
  current: {name: a, other: c, retainKeysMap: {name: foo}}
  modified: {name: a, value: b, retainKeysMap: {name: foo}}
  twoWay: {value: b}
  threeWay: {value: b}
  result: {name: a, value: b, other: c, retainKeysMap: {name: foo}}
- id: delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  twoWay: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  modified: {mergingIntList: [1, 2]}
  current: {mergingIntList: [1, 2, 3, 4]}
  threeWay: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [1, 2, 4]}
- id: delete all duplicate items in lists of scalars
  original: {mergingIntList: [1, 2, 3, 3]}
  twoWay: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  modified: {mergingIntList: [1, 2]}
  current: {mergingIntList: [1, 2, 3, 3, 4]}
  threeWay: {$setElementOrder/mergingIntList: [1, 2], $deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [1, 2, 4]}
- id: add and delete items in lists of scalars
  original: {mergingIntList: [1, 2, 3]}
  twoWay:
    {$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3], mergingIntList: [4]}
  modified: {mergingIntList: [1, 2, 4]}
  current: {mergingIntList: [1, 2, 3, 4]}
  threeWay: {$setElementOrder/mergingIntList: [1, 2, 4], $deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [1, 2, 4]}
- id: merge lists of maps
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  modified: {mergingList: [{name: 4, value: 4}, {name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 4}, {name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  result: {mergingList: [{name: 4, value: 4}, {name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
- id: merge lists of maps with conflict
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}]
  modified: {mergingList: [{name: 1}, {name: 2, value: 2}, {name: 3, value: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 3, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 2, value: 2}, {name: 3, value: 3}]
  result: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
- id: add field to map in merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: 1}]}
  modified: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, other: a}, {name: 3, value: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]
  result: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2}, {name: 3, value: 2, other: b}]}
- id: add duplicate field to map in merging list
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: 1}]}
  modified: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
  threeWay: {}
  result: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
- id: add an item that already exists in current object in merging list
  original: {mergingList: [{name: 1, value: a}, {name: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}], mergingList: [{name: 3}]}
  modified: {mergingList: [{name: 1, value: a}, {name: 2}, {name: 3}]}
  current: {mergingList: [{name: 1, value: a, other: x}, {name: 2}, {name: 3}]}
  threeWay: {}
  result: {mergingList: [{name: 1, value: a, other: x}, {name: 2}, {name: 3}]}
- id: add duplicate field to map in merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: 1}]}
  modified: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 3, other: b}]}
  threeWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 2, value: 2}]}
  result: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
- id: replace map field value in merging list with conflict
  original: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: a}]}
  modified: {mergingList: [{name: 1, value: a}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, value: 3, other: a}, {name: 2, value: 2, other: b}]}
  threeWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: a}]}
  result: {mergingList: [{name: 1, value: a, other: a}, {name: 2, value: 2, other: b}]}
- id: delete map from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 1, $patch: delete}]}
  modified: {mergingList: [{name: 2}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  threeWay: {$setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 1, $patch: delete}]}
  result: {mergingList: [{name: 2, other: b}]}
- id: delete missing map from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 2}], mergingList: [{name: 1, $patch: delete}]}
  modified: {mergingList: [{name: 2}]}
  current: {mergingList: [{name: 3, other: a}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}]
    mergingList: [{name: 2}, {name: 1, $patch: delete}]
  result: {mergingList: [{name: 2}, {name: 3, other: a}]}
- id: add map and delete map from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 3}, {name: 1, $patch: delete}]
  modified: {mergingList: [{name: 2}, {name: 3}]}
  current: {mergingList: [{name: 1}, {name: 2, other: b}, {name: 4, other: c}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 3}, {name: 1, $patch: delete}]
  result: {mergingList: [{name: 2, other: b}, {name: 4, other: c}, {name: 3}]}
- id: add map and delete map from merging list with conflict
  original: {mergingList: [{name: 1}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 3}, {name: 1, $patch: delete}]
  modified: {mergingList: [{name: 2}, {name: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 4, other: c}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 2}, {name: 3}]
    mergingList: [{name: 2}, {name: 3}, {name: 1, $patch: delete}]
  result: {mergingList: [{name: 4, other: c}, {name: 2}, {name: 3}]}
- id: delete field from map in merging list
  original: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: null}]}
  modified: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, value: 1, other: a}, {name: 2, value: 2, other: b}]}
  threeWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: null}]}
  result: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
- id: delete missing field from map in merging list with conflict
  original: {mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 1}, {name: 2}], mergingList: [{name: 1, value: null}]}
  modified: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, value: null}, {name: 2, value: 2}]
  result: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
- id: replace non merging list nested in merging list with deletion conflict
  original: {mergingList: [{name: 1, nonMergingList: [{name: 1}, {name: 2, value: 2}]}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}]
  modified: {mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}, {name: 2}]}
  current: {mergingList: [{name: 1, other: a, nonMergingList: [{name: 2, value: 2}]}, {name: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 1, nonMergingList: [{name: 1, value: 1}]}]
  result: {mergingList: [{name: 1, other: a, nonMergingList: [{name: 1, value: 1}]}, {name: 2, other: b}]}
- id: add field to map in merging list nested in merging list with value conflict
  original: {mergingList: [{name: 1, mergingList: [{name: 1}, {name: 2, value: 2}]}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList:
    - {$setElementOrder/mergingList: [{name: 1}, {name: 2}], name: 1, mergingList: [{name: 1, value: 1}]}
  modified: {mergingList: [{name: 1, mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]}, {name: 2}]}
  current:
    mergingList:
    - {name: 1, other: a, mergingList: [{name: 1, value: a, other: c}, {name: 2, value: b, other: d}]}
    - {name: 2, other: b}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList:
    - $setElementOrder/mergingList: [{name: 1}, {name: 2}]
      name: 1
      mergingList: [{name: 1, value: 1}, {name: 2, value: 2}]
  result:
    mergingList:
    - {name: 1, other: a, mergingList: [{name: 1, value: 1, other: c}, {name: 2, value: 2, other: d}]}
    - {name: 2, other: b}
- id: add field to map in merging list nested in merging list with deletion conflict (reordered)
  original: {mergingList: [{name: 1, mergingList: [{name: 1}, {name: 2, value: 2}]}, {name: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList:
    - {$setElementOrder/mergingList: [{name: 2}, {name: 1}], name: 1, mergingList: [{name: 1, value: 1}]}
  modified: {mergingList: [{name: 1, mergingList: [{name: 2, value: 2}, {name: 1, value: 1}]}, {name: 2}]}
  current: {mergingList: [{name: 1, other: a, mergingList: [{name: 2, value: 2, other: d}]}, {name: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList:
    - {$setElementOrder/mergingList: [{name: 2}, {name: 1}], name: 1, mergingList: [{name: 1, value: 1}]}
  result:
    mergingList:
    - {name: 1, other: a, mergingList: [{name: 2, value: 2, other: d}, {name: 1, value: 1}]}
    - {name: 2, other: b}
- id: add map to merging list by pointer with conflict
  original: {mergeItemPtr: [{name: 1}]}
  twoWay: {$setElementOrder/mergeItemPtr: [{name: 1}, {name: 2}], mergeItemPtr: [{name: 2}]}
  modified: {mergeItemPtr: [{name: 1}, {name: 2}]}
  current: {mergeItemPtr: [{name: 3}]}
  threeWay: {$setElementOrder/mergeItemPtr: [{name: 1}, {name: 2}], mergeItemPtr: [{name: 1}, {name: 2}]}
  result: {mergeItemPtr: [{name: 1}, {name: 2}, {name: 3}]}
- id: merge lists of scalars
  original: {mergingIntList: [1, 2]}
  twoWay: {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3]}
  modified: {mergingIntList: [1, 2, 3]}
  current: {mergingIntList: [1, 2, 4]}
  threeWay: {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3]}
  result: {mergingIntList: [1, 2, 3, 4]}
- id: add duplicate field to map in merging int list
  original: {mergingIntList: [1, 2]}
  twoWay: {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3]}
  modified: {mergingIntList: [1, 2, 3]}
  current: {mergingIntList: [1, 2, 3]}
  threeWay: {}
  result: {mergingIntList: [1, 2, 3]}
- id: add an item in a list of primitives and preserve order
  original: {mergingIntList: [1, 2]}
  twoWay: {$setElementOrder/mergingIntList: [3, 1, 2], mergingIntList: [3]}
  modified: {mergingIntList: [3, 1, 2]}
  current: {mergingIntList: [1, 4, 2]}
  threeWay: {$setElementOrder/mergingIntList: [3, 1, 2], mergingIntList: [3]}
  result: {mergingIntList: [3, 1, 4, 2]}
- id: delete an item in a list of primitives and preserve order
  original: {mergingIntList: [1, 2, 3]}
  twoWay: {$setElementOrder/mergingIntList: [2, 1], $deleteFromPrimitiveList/mergingIntList: [3]}
  modified: {mergingIntList: [2, 1]}
  current: {mergingIntList: [1, 2, 3]}
  threeWay: {$setElementOrder/mergingIntList: [2, 1], $deleteFromPrimitiveList/mergingIntList: [3]}
  result: {mergingIntList: [2, 1]}
- id: add multiple items in a list and preserve order
  original: {mergingList: [{name: 1}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 4}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  modified: {mergingList: [{name: 1}, {name: 4, value: 4}, {name: 2, value: 2}, {name: 3, value: 3}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 4}, {name: 2}, {name: 3}]
    mergingList: [{name: 4, value: 4}, {name: 3, value: 3}]
  result: {mergingList: [{name: 1, other: a}, {name: 4, value: 4}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
- id: delete an item in a list and preserve order
  original: {mergingList: [{name: 1}, {name: 3, value: 3}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 2}, {name: 1}], mergingList: [{name: 3, $patch: delete}]}
  modified: {mergingList: [{name: 2, value: 2}, {name: 1}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
  threeWay: {$setElementOrder/mergingList: [{name: 2}, {name: 1}], mergingList: [{name: 3, $patch: delete}]}
  result: {mergingList: [{name: 2, value: 2, other: b}, {name: 1, other: a}]}
- id: change an item in a list and preserve order
  original: {mergingList: [{name: 1}, {name: 3, value: 3}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 2}, {name: 3}, {name: 1}], mergingList: [{name: 3, value: x}]}
  modified: {mergingList: [{name: 2, value: 2}, {name: 3, value: x}, {name: 1}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
  threeWay: {$setElementOrder/mergingList: [{name: 2}, {name: 3}, {name: 1}], mergingList: [{name: 3, value: x}]}
  result: {mergingList: [{name: 2, value: 2, other: b}, {name: 3, value: x}, {name: 1, other: a}]}
- id: add and delete an item in a list and preserve order
  original: {mergingList: [{name: 1}, {name: 3, value: 3}, {name: 2, value: 2}]}
  twoWay:
    $setElementOrder/mergingList: [{name: 4}, {name: 2}, {name: 1}]
    mergingList: [{name: 4, value: 4}, {name: 3, $patch: delete}]
  modified: {mergingList: [{name: 4, value: 4}, {name: 2, value: 2}, {name: 1}]}
  current: {mergingList: [{name: 1, other: a}, {name: 2, value: 2, other: b}, {name: 3, value: 3}]}
  threeWay:
    $setElementOrder/mergingList: [{name: 4}, {name: 2}, {name: 1}]
    mergingList: [{name: 4, value: 4}, {name: 3, $patch: delete}]
  result: {mergingList: [{name: 4, value: 4}, {name: 2, value: 2, other: b}, {name: 1, other: a}]}
- id: set elements order in a list
  original: {mergingList: [{name: 1}, {name: 3, value: 3}, {name: 4, value: 4}, {name: 2, value: 2}]}
  twoWay: {$setElementOrder/mergingList: [{name: 4}, {name: 2}, {name: 3}, {name: 1}]}
  modified: {mergingList: [{name: 4, value: 4}, {name: 2, value: 2}, {name: 3, value: 3}, {name: 1}]}
  current: {mergingList: [{name: 1, other: a}, {name: 3, value: 3}, {name: 4, value: 4}, {name: 2, value: 2}]}
  threeWay: {$setElementOrder/mergingList: [{name: 4}, {name: 2}, {name: 3}, {name: 1}]}
  result: {mergingList: [{name: 4, value: 4}, {name: 2, value: 2}, {name: 3, value: 3}, {name: 1, other: a}]}
- id: retainKeys map replaces non-merging list
  original: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  modified: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: c}, {name: b}]}}
  twoWay:
    retainKeysMap: {$retainKeys: [name, nonMergingList, value], nonMergingList: [{name: a}, {name: c}, {name: b}]}
  threeWay:
    retainKeysMap: {$retainKeys: [name, nonMergingList, value], nonMergingList: [{name: a}, {name: c}, {name: b}]}
  result: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: c}, {name: b}]}}
- id: retainKeys map nested non-merging list with no change with conflict
  original: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}, {name: c}]}}
  modified: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
  twoWay: {retainKeysMap: {$retainKeys: [name, nonMergingList, value], value: bar}}
  threeWay:
    retainKeysMap: {$retainKeys: [name, nonMergingList, value], value: bar, nonMergingList: [{name: a}, {name: b}]}
  result: {retainKeysMap: {name: foo, value: bar, nonMergingList: [{name: a}, {name: b}]}}
- id: retainKeys map deletes nested non-merging list
  original: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, nonMergingList: [{name: a}, {name: b}]}}
  modified: {retainKeysMap: {name: foo, value: bar}}
  twoWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, nonMergingList: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name, value], value: bar, nonMergingList: null}}
  result: {retainKeysMap: {name: foo, value: bar}}
- id: retainKeys map nested merging int list with no change
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  modified: {retainKeysMap: {name: foo, value: bar, mergingIntList: [1, 2]}}
  twoWay: {retainKeysMap: {$retainKeys: [mergingIntList, name, value], value: bar}}
  threeWay:
    retainKeysMap: {$retainKeys: [mergingIntList, name, value], $setElementOrder/mergingIntList: [1, 2], value: bar}
  result: {retainKeysMap: {name: foo, value: bar, mergingIntList: [1, 2, 3]}}
- id: retainKeys map adds an item in nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  modified: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 4]}}
  twoWay:
    retainKeysMap:
      {$setElementOrder/mergingIntList: [1, 2, 4], $retainKeys: [mergingIntList, name], mergingIntList: [4]}
  threeWay:
    retainKeysMap:
      {$setElementOrder/mergingIntList: [1, 2, 4], $retainKeys: [mergingIntList, name], mergingIntList: [4]}
  result: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 4, 3]}}
- id: retainKeys map adds an item and deletes an item in nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3, 4]}}
  modified: {retainKeysMap: {name: foo, mergingIntList: [1, 3, 5]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      mergingIntList: [5]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3, 5]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingIntList, name]
      mergingIntList: [5]
      $deleteFromPrimitiveList/mergingIntList: [2]
      $setElementOrder/mergingIntList: [1, 3, 5]
  result: {retainKeysMap: {name: foo, mergingIntList: [1, 3, 5, 4]}}
- id: retainKeys map deletes nested merging int list
  original: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  current: {retainKeysMap: {name: foo, mergingIntList: [1, 2, 3]}}
  modified: {retainKeysMap: {name: foo}}
  twoWay: {retainKeysMap: {$retainKeys: [name], mergingIntList: null}}
  threeWay: {retainKeysMap: {$retainKeys: [name], mergingIntList: null}}
  result: {retainKeysMap: {name: foo}}
- id: retainKeys map nested merging list with no change
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}]}}
  modified: {retainKeysMap: {name: foo, value: bar, mergingList: [{name: a}, {name: b}]}}
  twoWay: {retainKeysMap: {$retainKeys: [mergingList, name, value], value: bar}}
  threeWay:
    retainKeysMap:
      {$retainKeys: [mergingList, name, value], $setElementOrder/mergingList: [{name: a}, {name: b}], value: bar}
  result: {retainKeysMap: {name: foo, value: bar, mergingList: [{name: a}, {name: b}, {name: c}]}}
- id: retainKeys map adds an item in nested merging list
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: x}]}}
  modified: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}, {name: b}, {name: c}]
      mergingList: [{name: c}]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}, {name: b}, {name: c}]
      mergingList: [{name: c}]
  result: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: c}, {name: x}]}}
- id: retainKeys map deletes an item in nested merging list
  original: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}]}}
  current: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: b}, {name: x}]}}
  modified: {retainKeysMap: {name: foo, mergingList: [{name: a}]}}
  twoWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}]
      mergingList: [{name: b, $patch: delete}]
  threeWay:
    retainKeysMap:
      $retainKeys: [mergingList, name]
      $setElementOrder/mergingList: [{name: a}]
      mergingList: [{name: b, $patch: delete}]
  result: {retainKeysMap: {name: foo, mergingList: [{name: a}, {name: x}]}}
- id: retainKeys list of maps clears a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: a, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  twoWay: {}
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
- id: retainKeys list of maps changes a field and clear a field with conflict
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: old}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: modified, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo, value: new}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: new}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name, value], name: foo, value: new}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: new}]}
- id: retainKeys list of maps deletes a field and clear a field
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  current: {retainKeysMergingList: [{name: bar}, {name: foo, value: a, other: x}]}
  modified: {retainKeysMergingList: [{name: bar}, {name: foo}]}
  twoWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]
  threeWay:
    $setElementOrder/retainKeysMergingList: [{name: bar}, {name: foo}]
    retainKeysMergingList: [{$retainKeys: [name], name: foo, value: null}]
  result: {retainKeysMergingList: [{name: bar}, {name: foo}]}
- id: delete and reorder in one list, reorder in another
  original:
    mergingList: [{name: a, value: a}, {name: b, value: b}]
    mergeItemPtr: [{name: c, value: c}, {name: d, value: d}]
  current:
    mergingList: [{name: a, value: a}, {name: b, value: b}]
    mergeItemPtr: [{name: c, value: c}, {name: d, value: d}]
  modified:
    mergingList: [{name: b, value: b}]
    mergeItemPtr: [{name: d, value: d}, {name: c, value: c}]
  twoWay:
    $setElementOrder/mergingList: [{name: b}]
    $setElementOrder/mergeItemPtr: [{name: d}, {name: c}]
    mergingList: [{$patch: delete, name: a}]
  threeWay:
    $setElementOrder/mergingList: [{name: b}]
    $setElementOrder/mergeItemPtr: [{name: d}, {name: c}]
    mergingList: [{$patch: delete, name: a}]
  result:
    mergingList: [{name: b, value: b}]
    mergeItemPtr: [{name: d, value: d}, {name: c, value: c}]
# kubeplane: pins diffMaps' retainKeys list skipping null values
- id: retainKeys map leaves a key set to null out of $retainKeys
  original: {retainKeysMap: {name: foo, value: a}}
  current: {retainKeysMap: {name: foo, value: a}}
  modified: {retainKeysMap: {name: foo, value: null}}
  twoWay: {retainKeysMap: {$retainKeys: [name], value: null}}
  twoWayResult: {retainKeysMap: {name: foo}}
  threeWay: {retainKeysMap: {$retainKeys: [name], value: null}}
  result: {retainKeysMap: {name: foo}}
# TestReplaceWithRawExtension
- id: replace RawExtension field and merge list
  original:
    {name: my-object, value: some-value, other: current-other, mergingList: [{name: 1}],
     replacingItem: {Some: Generic, Yaml: Inside, The: RawExtension, Field: Period}}
  current:
    {name: my-object, value: some-value, other: current-other, mergingList: [{name: 1}, {name: 3}],
     replacingItem: {Some: Generic, Yaml: Inside, The: RawExtension, Field: Period}}
  modified:
    {name: my-object, value: some-value, other: current-other, mergingList: [{name: 1}, {name: 2}],
     replacingItem: {Newly: Modified, Yaml: Inside, The: RawExtension}}
  twoWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 2}]
    replacingItem: {Newly: Modified, Yaml: Inside, The: RawExtension}
  threeWay:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}]
    mergingList: [{name: 2}]
    replacingItem: {Newly: Modified, Yaml: Inside, The: RawExtension}
  result:
    {name: my-object, value: some-value, other: current-other, mergingList: [{name: 1}, {name: 2}, {name: 3}],
     replacingItem: {Newly: Modified, Yaml: Inside, The: RawExtension}}
# TestUnknownField (fields MergeItem does not declare)
- id: unknown field removed only
  original: {name: foo, scalar: true, complex: {nested: true}}
  current: {name: foo, scalar: true, complex: {nested: true}, array: [1, 2, 3]}
  modified: {name: foo}
  twoWay: {complex: null, scalar: null}
  threeWay: {complex: null, scalar: null}
  result: {array: [1, 2, 3], name: foo}
- id: unknown field added only
  original: {name: foo}
  current: {name: foo}
  modified: {name: foo, scalar: true, complex: {nested: true}, array: [1, 2, 3]}
  twoWay: {array: [1, 2, 3], complex: {nested: true}, scalar: true}
  threeWay: {array: [1, 2, 3], complex: {nested: true}, scalar: true}
  result: {array: [1, 2, 3], complex: {nested: true}, name: foo, scalar: true}
"""
)


@pytest.mark.parametrize("case", ROUND_TRIP)
def test_two_way_patch(case: dict[str, Any]) -> None:
    original = case.get("original") or {}
    patch = create_two_way_merge_patch(original, case["modified"], kind=ITEM, schema=MERGE_ITEM)
    assert patch == case["twoWay"]
    result = strategic_merge_patch(original, patch, kind=ITEM, schema=MERGE_ITEM)
    assert result == case.get("twoWayResult", case["modified"])


@pytest.mark.parametrize("case", ROUND_TRIP)
def test_three_way_patch(case: dict[str, Any]) -> None:
    original = case.get("original") or {}
    patch = create_three_way_merge_patch(original, case["modified"], case["current"], kind=ITEM, schema=MERGE_ITEM)
    assert patch == case["threeWay"]
    assert strategic_merge_patch(case["current"], patch, kind=ITEM, schema=MERGE_ITEM) == case["result"]


# --- apply only: patches CreateTwoWayMergePatch would not produce -------------------------------------------

APPLY = _cases(
    """
# customStrategicMergePatchTestCaseData
- id: unique scalars when merging lists
  original: {mergingIntList: [1, 2]}
  patch: {mergingIntList: [2, 3]}
  result: {mergingIntList: [1, 2, 3]}
- id: delete map from nested map
  original: {simpleMap: {key1: 1, key2: 1}}
  patch: {simpleMap: {$patch: delete}}
  result: {simpleMap: {}}
- id: delete all items from merging list
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{$patch: replace}]}
  result: {mergingList: []}
- id: merge empty merging lists
  original: {mergingList: []}
  patch: {mergingList: []}
  result: {mergingList: []}
- id: delete all keys from map
  original: {name: 1, value: 1}
  patch: {$patch: replace}
  result: {}
- id: add key and delete all keys from map
  original: {name: 1, value: 1}
  patch: {other: a, $patch: replace}
  result: {other: a}
- id: delete all duplicate entries in a merging list
  original: {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}, {name: 3}, {name: 3}]}
  patch: {mergingList: [{name: 1, $patch: delete}, {name: 1, $patch: delete}, {name: 3, $patch: delete}]}
  result: {mergingList: [{name: 2, value: a}]}
- id: one delete directive removes every duplicate (kubernetes#38342)
  original: {mergingList: [{name: 1}, {name: 1}, {name: 2, value: a}]}
  patch: {mergingList: [{name: 1, $patch: delete}]}
  result: {mergingList: [{name: 2, value: a}]}
- id: retainKeys map can add a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo}}
  patch: {retainKeysMap: {value: bar}}
  result: {retainKeysMap: {name: foo, value: bar}}
- id: retainKeys map can delete a field when no retainKeys directive present
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {value: null}}
  result: {retainKeysMap: {name: foo}}
- id: retainKeys map merge an empty map
  original: {retainKeysMap: {name: foo, value: a}}
  patch: {retainKeysMap: {}}
  result: {retainKeysMap: {name: foo, value: a}}
- id: retainKeys list can change a field when no retainKeys directive present
  original: {retainKeysMergingList: [{name: bar}, {name: foo, value: a}]}
  patch: {retainKeysMergingList: [{name: foo, value: b}]}
  result: {retainKeysMergingList: [{name: bar}, {name: foo, value: b}]}
- id: preserve the order from the patch in a merging list
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, other: x}]}
  result: {mergingList: [{name: 3, value: c}, {name: 1, value: a}, {name: 2, value: b, other: x}]}
- id: preserve the order from the patch in a merging list 2
  original: {mergingList: [{name: 1}, {name: 2, value: b}, {name: 3}]}
  patch: {mergingList: [{name: 3, value: c}, {name: 1, value: a}]}
  result: {mergingList: [{name: 2, value: b}, {name: 3, value: c}, {name: 1, value: a}]}
- id: preserve the order from the patch in a merging int list
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1, 2]}
  result: {mergingIntList: [3, 1, 2]}
- id: preserve the order from the patch in a merging int list 2
  original: {mergingIntList: [1, 2, 3]}
  patch: {mergingIntList: [3, 1]}
  result: {mergingIntList: [2, 3, 1]}
- id: $setElementOrder contains item that is not present in the list to be merged
  original: {mergingList: [{name: 1}, {name: 3}]}
  patch:
    $setElementOrder/mergingList: [{name: 3}, {name: 2}, {name: 1}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  result: {mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]}
- id: $setElementOrder contains item that is not present in the int list to be merged
  original: {mergingIntList: [1, 3]}
  patch: {$setElementOrder/mergingIntList: [3, 2, 1]}
  result: {mergingIntList: [3, 1]}
# kubernetes#123304 (v1.30+): a value added where the original had none drops its nulls and $patch objects
- id: added value drops null members and directive objects
  original: {name: a}
  patch: {simpleMap: {key1: x, key2: null, nested: {$patch: delete}}, nonMergingList: [{name: 1}, {$patch: replace}]}
  result: {name: a, simpleMap: {key1: x}, nonMergingList: [{name: 1}]}
- id: $deleteFromPrimitiveList of a missing list is ignored
  original: {name: a}
  patch: {$deleteFromPrimitiveList/mergingIntList: [1]}
  result: {name: a}
- id: replace-strategy map is replaced, not merged
  original: {replacingItem: {a: 1, b: 2}}
  patch: {replacingItem: {c: 3}}
  result: {replacingItem: {c: 3}}
- id: value of another JSON type replaces
  original: {simpleMap: {a: 1}, mergingList: [{name: 1}]}
  patch: {simpleMap: [1], mergingList: {name: 1}}
  result: {simpleMap: [1], mergingList: {name: 1}}
- id: without $setElementOrder new elements go before the original's (mergeSortedSlice)
  original: {mergingList: [{name: 1}, {name: 2}]}
  patch: {mergingList: [{name: 3}, {name: 2, value: b}]}
  result: {mergingList: [{name: 3}, {name: 1}, {name: 2, value: b}]}
"""
)


@pytest.mark.parametrize("case", APPLY)
def test_apply(case: dict[str, Any]) -> None:
    assert strategic_merge_patch(case["original"], case["patch"], kind=ITEM, schema=MERGE_ITEM) == case["result"]


ERRORS = _cases(
    """
- id: should check if order in $setElementOrder and patch list match
  original: {mergingList: [{name: 1}, {name: 3}, {name: 2}]}
  patch:
    $setElementOrder/mergingList: [{name: 1}, {name: 2}, {name: 3}]
    mergingList: [{name: 3, value: 3}, {name: 1, value: 1}]
  error: "doesn't match $setElementOrder list"
  code: 422
- id: should check if order in $setElementOrder and patch int list match
  original: {mergingIntList: [1, 3, 2]}
  patch: {$setElementOrder/mergingIntList: [1, 2, 3], mergingIntList: [3, 1]}
  error: "doesn't match $setElementOrder list"
  code: 422
- id: missing merge key should error out
  original: {mergingList: [{name: 1, value: a}]}
  patch: {mergingList: [{value: b}]}
  error: "map: map[value:b] does not contain declared merge key: name"
  code: 422
- id: delete directive without merge key
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{$patch: delete}]}
  error: does not contain declared merge key
  code: 422
- id: merge directive in a list is not supported
  original: {mergingList: [{name: 1}]}
  patch: {mergingList: [{$patch: merge}]}
  error: merging lists cannot yet be specified in the patch
  code: 422
- id: unknown directive in a map
  original: {simpleMap: {a: b}}
  patch: {simpleMap: {$patch: nope}}
  error: "unknown patch type: nope in map: map[$patch:nope]"
  code: 422
- id: lists of lists are not supported
  original: {mergingIntList: [[1]]}
  patch: {mergingIntList: [[2]]}
  error: lists of lists are not supported
  code: 422
- id: mixed element types
  original: {mergingIntList: [1]}
  patch: {mergingIntList: [a]}
  error: list element types are not identical
  code: 422
- id: ints and floats are different types, as Go decodes them
  original: {mergingIntList: [1]}
  patch: {$deleteFromPrimitiveList/mergingIntList: [1.0]}
  error: "list element types are not identical: [[1] [1]]"
  code: 422
- id: retainKeys must be a list (ErrBadPatchFormatForRetainKeys)
  original: {retainKeysMap: {name: a}}
  patch: {retainKeysMap: {$retainKeys: name}}
  error: invalid patch format of retainKeys
  code: 400
- id: patch key missing from retainKeys (ErrBadPatchFormatForRetainKeys)
  original: {retainKeysMap: {name: a}}
  patch: {retainKeysMap: {$retainKeys: [name], value: b}}
  error: invalid patch format of retainKeys
  code: 400
- id: deleteFromPrimitiveList without a list name (ErrBadPatchFormatForPrimitiveList)
  original: {mergingIntList: [1]}
  patch: {$deleteFromPrimitiveListmergingIntList: [1]}
  error: invalid patch format of primitive list
  code: 400
- id: setElementOrder without a list name (ErrBadPatchFormatForSetElementOrderList)
  original: {mergingIntList: [1]}
  patch: {$setElementOrder: [1]}
  error: invalid patch format of setElementOrder list
  code: 400
- id: setElementOrder must be a list
  original: {mergingIntList: [1]}
  patch: {$setElementOrder/mergingIntList: 1}
  error: "expected a []interface {}, but received a int64"
  code: 422
"""
)


@pytest.mark.parametrize("case", ERRORS)
def test_errors(case: dict[str, Any]) -> None:
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch(case["original"], case["patch"], kind=ITEM, schema=MERGE_ITEM)
    assert case["error"] in str(caught.value)
    assert caught.value.code == case["code"]


@pytest.mark.parametrize("bad", [None, [], "x", 1], ids=["null", "array", "string", "number"])
def test_non_object_documents_are_bad_requests(bad: Any) -> None:
    """ErrBadJSONDoc: the apiserver answers 400 when the body does not decode into an object."""
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch({}, bad, kind=POD)
    assert caught.value.code == 400
    with pytest.raises(PatchError):
        create_two_way_merge_patch(bad, {}, kind=POD)


# --- built-in patch metadata (k8s.io/api struct tags) --------------------------------------------------------

BUILTIN = _cases(
    """
- id: Pod containers merge by name and env by name
  kind: ["", Pod]
  original: {spec: {containers: [{name: a, image: x, env: [{name: A, value: "1"}]}, {name: b, image: y}]}}
  patch:
    spec:
      $setElementOrder/containers: [{name: a}, {name: b}]
      containers: [{name: a, $setElementOrder/env: [{name: A}, {name: B}], env: [{name: B, value: "2"}]}]
  result:
    spec: {containers: [{name: a, image: x, env: [{name: A, value: "1"}, {name: B, value: "2"}]}, {name: b, image: y}]}
- id: Container ports merge by containerPort, volumeMounts by mountPath
  kind: ["", Pod]
  original: {spec: {containers: [{name: a, ports: [{containerPort: 80}], volumeMounts: [{mountPath: /d, name: v}]}]}}
  patch:
    spec: {containers: [{name: a, ports: [{containerPort: 80, name: http}], volumeMounts: [{mountPath: /e, name: w}]}]}
  result:
    spec:
      containers:
      - name: a
        ports: [{containerPort: 80, name: http}]
        volumeMounts: [{mountPath: /e, name: w}, {mountPath: /d, name: v}]
- id: PodSpec tolerations have no merge key and are replaced
  kind: ["", Pod]
  original: {spec: {tolerations: [{key: a, operator: Exists}]}}
  patch: {spec: {tolerations: [{key: b, operator: Exists}]}}
  result: {spec: {tolerations: [{key: b, operator: Exists}]}}
- id: Container args and envFrom are atomic
  kind: ["", Pod]
  original: {spec: {containers: [{name: a, args: [x, y], envFrom: [{configMapRef: {name: c}}]}]}}
  patch: {spec: {containers: [{name: a, args: [z], envFrom: [{secretRef: {name: s}}]}]}}
  result: {spec: {containers: [{name: a, args: [z], envFrom: [{secretRef: {name: s}}]}]}}
- id: PodStatus conditions merge by type
  kind: ["", Pod]
  original: {status: {conditions: [{type: Ready, status: "False"}, {type: PodScheduled, status: "True"}]}}
  patch: {status: {conditions: [{type: Ready, status: "True"}]}}
  result: {status: {conditions: [{type: Ready, status: "True"}, {type: PodScheduled, status: "True"}]}}
- id: ObjectMeta finalizers union and $deleteFromPrimitiveList
  kind: ["", Pod]
  original: {metadata: {finalizers: [a, b]}}
  patch: {metadata: {finalizers: [c, a], $deleteFromPrimitiveList/finalizers: [b]}}
  result: {metadata: {finalizers: [c, a]}}
- id: ObjectMeta ownerReferences merge by uid, labels merge as maps
  kind: [apps, ReplicaSet]
  original: {metadata: {labels: {a: "1"}, ownerReferences: [{uid: u1, kind: Deployment}]}}
  patch: {metadata: {labels: {b: "2", a: null}, ownerReferences: [{uid: u2, kind: Deployment}]}}
  result: {metadata: {labels: {b: "2"}, ownerReferences: [{uid: u2, kind: Deployment}, {uid: u1, kind: Deployment}]}}
- id: NodeSpec taints have no patch strategy and are replaced
  kind: ["", Node]
  original: {spec: {taints: [{key: a, effect: NoSchedule}]}}
  patch: {spec: {taints: [{key: b, effect: NoExecute}]}}
  result: {spec: {taints: [{key: b, effect: NoExecute}]}}
- id: NodeStatus addresses and conditions merge by type
  kind: ["", Node]
  original: {status: {addresses: [{type: InternalIP, address: 10.0.0.1}], conditions: [{type: Ready, status: "True"}]}}
  patch: {status: {addresses: [{type: Hostname, address: n1}], conditions: [{type: Ready, status: Unknown}]}}
  result:
    status:
      addresses: [{type: Hostname, address: n1}, {type: InternalIP, address: 10.0.0.1}]
      conditions: [{type: Ready, status: Unknown}]
- id: Deployment pod template containers merge by name
  kind: [apps, Deployment]
  original: {spec: {replicas: 1, template: {spec: {containers: [{name: a, image: x}, {name: b, image: y}]}}}}
  patch: {spec: {template: {spec: {containers: [{name: b, image: z}]}}}}
  result: {spec: {replicas: 1, template: {spec: {containers: [{name: a, image: x}, {name: b, image: z}]}}}}
- id: Deployment strategy retainKeys clears rollingUpdate when switching to Recreate
  kind: [apps, Deployment]
  original: {spec: {strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 25%, maxUnavailable: 25%}}}}
  patch: {spec: {strategy: {$retainKeys: [type], type: Recreate}}}
  result: {spec: {strategy: {type: Recreate}}}
- id: StatefulSet and DaemonSet templates are PodTemplateSpecs
  kind: [apps, StatefulSet]
  original: {spec: {template: {spec: {volumes: [{name: v, emptyDir: {}}]}}}}
  patch:
    spec: {template: {spec: {$setElementOrder/volumes: [{name: v}, {name: w}], volumes: [{name: w, emptyDir: {}}]}}}
  result: {spec: {template: {spec: {volumes: [{name: v, emptyDir: {}}, {name: w, emptyDir: {}}]}}}}
- id: Service ports merge by port
  kind: ["", Service]
  original: {spec: {ports: [{port: 80, targetPort: 8080}, {port: 443}]}}
  patch: {spec: {ports: [{port: 80, targetPort: 9090}]}}
  result: {spec: {ports: [{port: 80, targetPort: 9090}, {port: 443}]}}
- id: PodDisruptionBudget selector has the replace strategy
  kind: [policy, PodDisruptionBudget]
  original: {spec: {selector: {matchLabels: {a: "1"}}}}
  patch: {spec: {selector: {matchLabels: {b: "2"}}}}
  result: {spec: {selector: {matchLabels: {b: "2"}}}}
- id: a kind without metadata merges like a JSON merge patch plus directives
  kind: [example.com, Widget]
  original: {spec: {items: [{name: a}], map: {x: 1, y: 2}}}
  patch: {spec: {items: [{name: b}], map: {x: null, $patch: replace, z: 3}}}
  result: {spec: {items: [{name: b}], map: {x: null, z: 3}}}
"""
)


@pytest.mark.parametrize("case", BUILTIN)
def test_builtin_patch_metadata(case: dict[str, Any]) -> None:
    kind = (case["kind"][0], case["kind"][1])
    assert strategic_merge_patch(case["original"], case["patch"], kind=kind) == case["result"]


def test_two_way_patch_for_volume_source_change_carries_retain_keys() -> None:
    """PodSpec.volumes is ``merge,retainKeys``: switching a volume's source clears the old one on the server."""
    original = {"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}
    modified = {"spec": {"volumes": [{"name": "v", "configMap": {"name": "c"}}]}}
    patch = create_two_way_merge_patch(original, modified, kind=POD)
    assert patch == {
        "spec": {
            "$setElementOrder/volumes": [{"name": "v"}],
            "volumes": [
                {"$retainKeys": ["configMap", "name"], "configMap": {"name": "c"}, "emptyDir": None, "name": "v"}
            ],
        }
    }
    live = {"spec": {"volumes": [{"name": "v", "emptyDir": {"medium": ""}}]}}
    assert strategic_merge_patch(live, patch, kind=POD) == modified


def test_three_way_patch_keeps_fields_set_by_others() -> None:
    """kubectl apply: a removed env var is deleted, the live object's defaults and status survive."""
    last_applied = {"spec": {"containers": [{"name": "a", "image": "x:1", "env": [{"name": "A"}, {"name": "B"}]}]}}
    new_config = {"spec": {"containers": [{"name": "a", "image": "x:2", "env": [{"name": "A"}]}]}}
    live = {
        "metadata": {"labels": {"added-by": "someone"}},
        "spec": {
            "containers": [
                {"name": "a", "image": "x:1", "env": [{"name": "A"}, {"name": "B"}], "imagePullPolicy": "IfNotPresent"}
            ]
        },
        "status": {"phase": "Running"},
    }
    patch = create_three_way_merge_patch(last_applied, new_config, live, kind=POD)
    assert patch == {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [
                {
                    "name": "a",
                    "image": "x:2",
                    "$setElementOrder/env": [{"name": "A"}],
                    "env": [{"name": "B", "$patch": "delete"}],
                }
            ],
        }
    }
    result = strategic_merge_patch(live, patch, kind=POD)
    assert result["spec"]["containers"] == [
        {"name": "a", "image": "x:2", "env": [{"name": "A"}], "imagePullPolicy": "IfNotPresent"}
    ]
    assert result["metadata"] == live["metadata"]
    assert result["status"] == live["status"]


def test_two_way_patch_of_labels_is_what_kubectl_label_sends() -> None:
    original = {"metadata": {"name": "p", "labels": {"a": "1", "b": "2"}}}
    modified = {"metadata": {"name": "p", "labels": {"a": "1", "c": "3"}}}
    assert create_two_way_merge_patch(original, modified, kind=POD) == {"metadata": {"labels": {"b": None, "c": "3"}}}


def test_inputs_are_not_mutated_and_results_share_nothing() -> None:
    original = {"spec": {"containers": [{"name": "a", "env": [{"name": "A"}]}], "tolerations": [{"key": "k"}]}}
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "a", "image": "i"}],
            "tolerations": [{"key": "t"}],
        }
    }
    before = copy.deepcopy((original, patch))
    result = strategic_merge_patch(original, patch, kind=POD)
    assert (original, patch) == before
    result["spec"]["tolerations"][0]["key"] = "changed"
    result["spec"]["containers"][0]["env"].append({"name": "B"})
    assert (original, patch) == before
    two_way = create_two_way_merge_patch(original, result, kind=POD)
    two_way["spec"]["tolerations"][0]["key"] = "again"
    assert result["spec"]["tolerations"][0]["key"] == "changed"


# --- property: apply(a, two_way(a, b)) == b -----------------------------------------------------------------

Obj = dict[str, Any]


def _obj(required: dict[str, st.SearchStrategy[Any]], **optional: st.SearchStrategy[Any]) -> st.SearchStrategy[Obj]:
    return st.fixed_dictionaries(required, optional=optional)


def _keyed(item: st.SearchStrategy[Obj], key: str, size: int = 3) -> st.SearchStrategy[list[Obj]]:
    """A merging list: elements unique by their merge key, as the API server's validation keeps them."""
    return st.lists(item, unique_by=lambda element: element[key], max_size=size)


_names = st.sampled_from(["a", "b", "c", "d"])
_words = st.sampled_from(["x", "y", "z"])
_ports = st.sampled_from([80, 443, 9000, 10000])
_container = _obj(
    {"name": _names},
    image=_words,
    env=_keyed(_obj({"name": _names}, value=_words), "name"),
    ports=_keyed(_obj({"containerPort": _ports}, protocol=_words), "containerPort"),
    args=st.lists(_words, max_size=3),
)
_volume = st.one_of(
    _obj({"name": _names, "emptyDir": st.just({})}), _obj({"name": _names, "configMap": _obj({"name": _words})})
)
_anything = st.one_of(_words, st.lists(st.integers(0, 3), max_size=3), st.dictionaries(_names, _words, max_size=2))
_metadata = _obj(
    {"name": st.just("p")},
    labels=st.dictionaries(_names, _words, max_size=3),
    finalizers=st.lists(_names, unique=True, max_size=4),
    ownerReferences=_keyed(_obj({"uid": _names, "kind": _words}), "uid"),
)
_spec = _obj(
    {},
    containers=_keyed(_container, "name"),
    initContainers=_keyed(_container, "name"),
    volumes=_keyed(_volume, "name"),
    tolerations=st.lists(_obj({"key": _names}), max_size=2),
    nodeSelector=st.dictionaries(_names, _words, max_size=2),
    extra=_anything,
)
_pod = _obj(
    {"kind": st.just("Pod"), "metadata": _metadata},
    spec=_spec,
    status=_obj({}, conditions=_keyed(_obj({"type": _names, "status": _words}), "type")),
)


@settings(max_examples=300, deadline=None)
@given(_pod, _pod)
def test_applying_the_two_way_patch_yields_the_modified_document(a: Obj, b: Obj) -> None:
    before = copy.deepcopy((a, b))
    patch = create_two_way_merge_patch(a, b, kind=POD)
    assert strategic_merge_patch(a, patch, kind=POD) == b
    assert (a, b) == before
    assert create_two_way_merge_patch(b, b, kind=POD) == {}


def test_builtin_schema_knows_the_upstream_tags() -> None:
    """Spot checks of the transcribed struct tags (core/v1 types.go)."""
    field = BUILTIN_SCHEMA.field
    assert field("PodSpec", "containers") == Field("merge", "name", "Container")
    assert field("PodSpec", "volumes") == Field("merge,retainKeys", "name")
    assert field("PodSpec", "topologySpreadConstraints") == Field("merge", "topologyKey")
    assert field("PodSpec", "tolerations") == Field()
    assert field("NodeSpec", "taints") == Field()
    assert field("Container", "ports") == Field("merge", "containerPort")
    assert field("DeploymentSpec", "strategy") == Field("retainKeys")
    assert BUILTIN_SCHEMA.root(("apps", "Deployment")) == "Deployment"
    assert BUILTIN_SCHEMA.root(("example.com", "Widget")) is None
