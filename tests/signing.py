"""Real Ed25519 signing keys for tests that act as a proven person from the command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# What the dashboard records for an act after a verified OIDC sign-in (``medmon.dashboards.actions``).
SIGNED_IN: dict[str, Any] = {"authenticated": True, "via": "dashboard"}


def make_key(folder: Path, name: str = "id_ed25519") -> tuple[Path, str]:
    """An Ed25519 private key file in OpenSSH format (as ``ssh-keygen -t ed25519`` writes) and its public line."""
    key = Ed25519PrivateKey.generate()
    path = folder / name
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption())
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return path, f"{public.decode('ascii')} {name}"


def register_owner(data: dict[str, Any], folder: Path) -> Path:
    """Register a new key beside the plan's clinical owner (in ``data``); the private key's path."""
    path, public = make_key(folder, "id_clinical_owner")
    data["owners"]["clinical"]["keys"] = [public]
    return path
