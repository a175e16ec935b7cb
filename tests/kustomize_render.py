"""Render a kustomization as `kubectl kustomize` does, for the few features
deploy/kubernetes uses, so the manifests are checked where kubectl is not installed:
`resources` (files and directories), `namespace`, and `patches` holding JSON 6902
operations (add, replace, remove) with a kind and name target. Anything else in a
kustomization is refused, so a manifest that starts using it is noticed here."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

KNOWN_FIELDS = frozenset({"apiVersion", "kind", "namespace", "resources", "patches"})
CLUSTER_SCOPED = frozenset({"Namespace", "RuntimeClass", "ClusterRole", "ClusterRoleBinding",
                            "CustomResourceDefinition", "PriorityClass", "StorageClass"})


def render(directory: Path) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise ValueError(f"{directory}: this renderer does not know {sorted(unknown)}")
    documents: list[dict[str, Any]] = []
    for entry in kustomization.get("resources", []):
        path = directory / entry
        if path.is_dir():
            documents.extend(render(path))
        else:
            documents.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    namespace = kustomization.get("namespace")
    if namespace:
        for document in documents:
            if document["kind"] not in CLUSTER_SCOPED:
                document.setdefault("metadata", {})["namespace"] = namespace
    for patch in kustomization.get("patches", []):
        target = patch["target"]
        operations = yaml.safe_load(patch["patch"])
        matched = [document for document in documents
                   if document["kind"] == target["kind"]
                   and document["metadata"]["name"] == target["name"]]
        if not matched:
            raise ValueError(f"{directory}: a patch's target matches nothing: {target}")
        for document in matched:
            for operation in operations:
                _apply(document, operation)
    return documents


def _apply(document: dict[str, Any], operation: dict[str, Any]) -> None:
    *parents, last = [part.replace("~1", "/").replace("~0", "~")
                      for part in operation["path"].lstrip("/").split("/")]
    node: Any = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        index = len(node) if last == "-" else int(last)
        if operation["op"] == "add":
            node.insert(index, copy.deepcopy(operation["value"]))
        elif operation["op"] == "replace":
            node[index] = copy.deepcopy(operation["value"])
        elif operation["op"] == "remove":
            del node[index]
        else:
            raise ValueError(f"unsupported patch operation {operation['op']!r}")
        return
    if operation["op"] in ("add", "replace"):
        if operation["op"] == "replace" and last not in node:
            raise ValueError(f"replace of a missing path {operation['path']}")
        node[last] = copy.deepcopy(operation["value"])
    elif operation["op"] == "remove":
        del node[last]
    else:
        raise ValueError(f"unsupported patch operation {operation['op']!r}")
