"""The address check of outbound webhooks (docs/api.md, "Retries and guarantees"), without a database or a network."""

import ipaddress
import socket

import pytest

from suspensions import outbound


@pytest.mark.parametrize(
    ("address", "private_allowed", "refused"),
    [
        ("127.0.0.1", False, "a loopback address"),
        ("169.254.169.254", False, "a cloud metadata address"),
        ("169.254.169.254", True, "a cloud metadata address"),
        ("::ffff:127.0.0.1", False, "a loopback address"),
        ("10.1.2.3", False, "a private address"),
        ("169.254.10.1", False, "a link-local address"),
        ("224.0.0.1", False, "a multicast address"),
        ("100.64.0.1", False, "not a public address"),
        ("127.0.0.1", True, ""),
        ("93.184.216.34", False, ""),
        # Issue 32: 6to4 and NAT64 forms of refused IPv4 addresses, and 192.0.0.0/24.
        ("2002:7f00:1::", False, "a loopback address"),
        ("2002:a9fe:a9fe::", False, "a cloud metadata address"),
        ("2002:a9fe:a9fe::", True, "a cloud metadata address"),
        ("2002:0a01:0203::1", False, "a private address"),
        ("2002:a9fe:0a01::", False, "a link-local address"),
        ("64:ff9b::7f00:1", False, "a loopback address"),
        ("64:ff9b::a9fe:a9fe", True, "a cloud metadata address"),
        ("192.0.0.8", False, "an IETF protocol assignment address"),
        ("192.0.0.170", False, "a private address"),
        ("2002:5db8:d822::1", False, ""),  # 6to4 of a public address
    ],
)
def test_the_address_check_refuses_what_is_not_the_public_internet(address, private_allowed, refused):
    assert outbound.refusal(ipaddress.ip_address(address), allow_private=private_allowed) == refused


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "2002:7f00:1::", "2002:a9fe:a9fe::", "192.0.0.8"])
def test_a_host_resolving_to_loopback_or_metadata_is_refused_without_webhook_allow_private(address, monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [(socket.AF_INET, 1, 6, "", (address, 443))])
    with pytest.raises(outbound.Refused, match=address):
        outbound.checked_address("https://hooks.example.test/in", allow_private=False)


def test_only_http_and_https_urls_are_called():
    with pytest.raises(outbound.Refused):
        outbound.checked_address("file:///etc/passwd", allow_private=True)
