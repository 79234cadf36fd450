"""Logging in from another machine over plain http works, with the default settings.

The test client is made to keep cookies as a browser does: one marked Secure that came
over plain http is dropped (werkzeug's test client would keep it). No traffic leaves the
process: 192.0.2.10 (TEST-NET-1) is only the Host the requests name.
"""

from __future__ import annotations

from tests.unit.test_panel_support import CSRF, PASSWORD, set_cookie

pytest_plugins = ["tests.unit.test_panel_support"]

REMOTE = "http://192.0.2.10:8081"


def as_a_browser(client, response, scheme: str):
    """Drop what a browser drops: a Secure cookie set over plain http."""
    for cookie in list(client._cookies.values()):
        if cookie.secure and scheme == "http":
            client.delete_cookie(cookie.key, domain=cookie.domain, path=cookie.path)
    return response


def browse(client, method: str, path: str, base_url: str = REMOTE, scheme=None, **kwargs):
    """A request; `scheme` is the browser's (a TLS proxy's client is on https while the
    panel sees http), by default base_url's."""
    response = client.open(path, method=method, base_url=base_url, **kwargs)
    return as_a_browser(client, response, scheme or base_url.split(":", 1)[0])


def log_in(client, base_url: str = REMOTE, scheme=None, **headers):
    page = browse(client, "GET", "/login", base_url, scheme, headers=headers)
    token = CSRF.search(page.get_data(as_text=True))[1]
    data = {"username": "alice", "password": PASSWORD, "csrf_token": token}
    headers = {"Referer": f"{base_url}/login", **headers}
    return browse(client, "POST", "/login", base_url, scheme, data=data, headers=headers)


def test_a_login_over_plain_http_from_another_machine_works_end_to_end(anonymous, operators):
    response = log_in(anonymous)
    assert response.status_code == 302, response.get_data(as_text=True)[:300]
    assert "Secure" not in set_cookie(response)
    home = browse(anonymous, "GET", "/")
    assert home.status_code == 200 and '<span class="who">alice</span>' in home.get_data(
        as_text=True
    )
    # A state change works too: logging out is a CSRF-protected POST.
    page = home.get_data(as_text=True)
    out = browse(anonymous, "POST", "/logout", data={"csrf_token": CSRF.search(page)[1]})
    assert out.status_code == 302 and browse(anonymous, "GET", "/").status_code == 302

    # Over https, directly or through a TLS proxy that says so, the cookie stays Secure.
    for base_url, headers in (("https://192.0.2.10", {}), (REMOTE, {"X-Forwarded-Proto": "https"})):
        over_tls = log_in(anonymous.application.test_client(), base_url, "https", **headers)
        assert over_tls.status_code == 302 and "Secure" in set_cookie(over_tls)
