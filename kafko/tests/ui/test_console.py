"""The web console end to end: headless Chromium against the real server binary."""

import base64
import datetime
import json
import os
import re
import threading
import time

from playwright.sync_api import expect

from conftest import ARTIFACTS, Server, shot

BUDGET = 200 * 1024


def produce(server, topic, records):
    status, body = server.request("POST", f"/v1/topics/{topic}/records", {"records": records})
    assert 200 <= status < 300, body
    return body


def create(server, topic, partitions=1):
    status, body = server.request("PUT", f"/v1/topics/{topic}", {"partitions": partitions})
    assert status in (200, 201), body


def unlabelled_controls(page):
    """Form controls a screen reader could not name."""
    return page.evaluate("""() => [...document.querySelectorAll('input, select, textarea, button')]
        .filter(e => e.offsetParent !== null)
        .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !(e.textContent || '').trim())
        .map(e => e.outerHTML)""")


def test_first_load_is_small_and_shows_the_overview(server, page):
    create(server, "first-load", 3)
    produce(server, "first-load", [{"value": f"v{i}"} for i in range(30)])
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    sizes = {}
    urls = {}
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.loadingFinished", lambda e: sizes.__setitem__(e["requestId"], e["encodedDataLength"]))
    page.goto(server.base + "/", wait_until="load")
    # `/` sent the browser to the console.
    assert page.url.startswith(server.base + "/ui")
    card = page.locator('section[data-topic="first-load"]')
    expect(card).to_be_visible()
    expect(card.locator("tbody tr")).to_have_count(3)
    expect(page.locator("#health")).to_have_text("ready")
    expect(page.locator("#version")).to_have_text(re.compile(r"^v\d+\.\d+\.\d+"))
    page.wait_for_timeout(300)
    total = sum(sizes.values())
    (ARTIFACTS / "first-load.json").write_text(json.dumps(
        {"bytes": total, "requests": sorted(urls[i] for i in sizes if i in urls)}, indent=1))
    print(f"first load: {total} bytes in {len(sizes)} responses")
    assert 0 < total < BUDGET, f"first load transferred {total} bytes"
    assert unlabelled_controls(page) == []
    shot(page, "overview")


def test_create_and_delete_a_topic(server, page):
    page.goto(server.base + "/ui")
    page.get_by_label("Name").fill("created-in-ui")
    page.get_by_label("Partitions").fill("4")
    page.get_by_role("button", name="Create topic").click()
    card = page.locator('section[data-topic="created-in-ui"]')
    expect(card.locator("tbody tr")).to_have_count(4)
    status, desc = server.request("GET", "/v1/topics/created-in-ui")
    assert status == 200 and len(desc["partitions"]) == 4
    page.once("dialog", lambda d: d.accept())
    card.get_by_role("button", name="Delete").click()
    expect(card).to_have_count(0)
    assert server.request("GET", "/v1/topics/created-in-ui")[0] == 404


def test_create_a_topic_from_the_keyboard(server, page):
    page.goto(server.base + "/ui")
    expect(page.locator("#health")).to_have_text("ready")
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "name":
            break
    else:
        raise AssertionError("the topic name field is not reachable with Tab")
    page.keyboard.type("keyboard-made")
    page.keyboard.press("Enter")
    expect(page.locator('section[data-topic="keyboard-made"]')).to_be_visible()


def test_a_bad_topic_name_shows_the_servers_words(server, page):
    bad = "no spaces allowed!"
    status, problem = server.request("PUT", "/v1/topics/no%20spaces%20allowed!", {"partitions": 1})
    assert status == 400
    page.goto(server.base + "/ui")
    page.get_by_label("Name").fill(bad)
    page.get_by_role("button", name="Create topic").click()
    alert = page.locator("#create-topic .error")
    expect(alert.locator(".detail")).to_have_text(problem["detail"])
    expect(alert.locator("code")).to_have_text(problem["code"])
    # Bad configuration is the server's to word as well.
    page.get_by_label("Name").fill("fine-name")
    page.get_by_label("Partitions").fill("5000")
    page.evaluate("document.querySelector('input[name=partitions]').removeAttribute('max')")
    status, problem = server.request("PUT", "/v1/topics/other-name", {"partitions": 5000, "compression": "none"})
    assert status == 400
    page.get_by_role("button", name="Create topic").click()
    expect(alert.locator(".detail")).to_have_text(problem["detail"])
    shot(page, "overview-error")


def test_produce_from_the_form_and_see_the_record(server, page):
    create(server, "form", 2)
    page.goto(server.base + "/ui#/topic/form")
    expect(page.locator("#page-info")).to_have_text(re.compile("Nothing from offset 0"))
    page.get_by_label("Key", exact=True).fill("user-42")
    page.get_by_label("Value").fill('{"order": 42, "items": ["tea", "milk"]}')
    page.get_by_label("Headers").fill("trace-id: abc123\nsource: console")
    page.locator("#produce-partition").select_option("1")
    page.get_by_role("button", name="Produce").click()
    expect(page.locator("#produce-result")).to_have_text("Written to partition 1 at offset 0.")
    record = page.locator('#records article[data-offset="0"]')
    expect(record.locator(".key")).to_have_text("user-42")
    expect(record.locator(".value pre.json")).to_contain_text('"items": [')
    expect(record.locator(".headers")).to_contain_text("trace-id: abc123")
    expect(record.locator(".headers")).to_contain_text("source: console")
    expect(page.locator("#partition")).to_have_value("1")
    status, body = server.request("GET", "/v1/topics/form/records?partition=1")
    assert body["records"][0]["key"] == "user-42"
    assert json.loads(body["records"][0]["value"]) == {"order": 42, "items": ["tea", "milk"]}
    # Binary bytes are hex and base64; non-JSON text is text.
    assert server.request("POST", "/v1/topics/form/records?partition=1", b"\x00\xffbin")[0] < 300
    assert server.request("POST", "/v1/topics/form/records?partition=1", b"plain words")[0] < 300
    page.get_by_role("button", name="Last").click()
    page.get_by_label("Page size").select_option("20")
    expect(page.locator('#records article[data-offset="1"] .value pre').first).to_have_text("00 ff 62 69 6e")
    expect(page.locator('#records article[data-offset="1"] .value pre.b64')).to_have_text("AP9iaW4=")
    expect(page.locator('#records article[data-offset="2"] .value pre.text')).to_have_text("plain words")
    assert unlabelled_controls(page) == []
    shot(page, "topic")


def test_live_tail_shows_records_produced_meanwhile_and_resumes(tmp_path, page):
    server = Server(tmp_path / "data")
    try:
        create(server, "tailed")
        produce(server, "tailed", [{"value": "old"}])
        resumes = []
        page.on("request", lambda r: resumes.append(r.headers.get("last-event-id"))
                if "follow=true" in r.url else None)
        page.goto(server.base + "/ui#/topic/tailed")
        page.get_by_role("button", name="Start live tail").click()
        expect(page.locator("#tail-status")).to_have_text("live")
        produce(server, "tailed", [{"value": "from curl while watching"}])
        tail = page.locator("#tail article")
        expect(tail).to_have_count(1)
        expect(tail.first.locator(".value")).to_have_text("from curl while watching")
        # The server goes away and comes back: the tail reconnects with Last-Event-ID and
        # continues after the last record it showed, without repeating it.
        server.restart()
        produce(server, "tailed", [{"value": "after the restart"}])
        expect(tail).to_have_count(2, timeout=15000)
        expect(tail.first.locator(".value")).to_have_text("after the restart")
        expect(page.locator("#tail-status")).to_have_text("live")
        # SSE ids are partition:offset:topic_id, so a resume names this incarnation.
        topic_id = server.request("GET", "/v1/topics/tailed")[1]["topic_id"]
        assert f"0:1:{topic_id}" in resumes, resumes
        shot(page, "topic-tail")
    finally:
        server.stop()


def test_browse_to_the_last_page_of_ten_thousand_records(server, page):
    create(server, "big")
    base = 1_700_000_000_000
    produce(server, "big", [{"key": f"k{i}", "value": f"record {i}", "timestamp": base + i * 1000}
                            for i in range(10_000)])
    reads = []
    page.on("request", lambda r: reads.append(r.url) if "/records?" in r.url else None)
    page.goto(server.base + "/ui#/topic/big?p=0&o=0")
    expect(page.locator("#records article").first).to_have_attribute("data-offset", "0")
    page.get_by_role("button", name="Last").click()
    expect(page.locator("#records article").last).to_have_attribute("data-offset", "9999")
    expect(page.locator("#records article")).to_have_count(50)
    expect(page.locator("#page-info")).to_have_text(re.compile("Offsets 9,950–9,999"))
    expect(page.get_by_role("button", name="Next")).to_be_disabled()
    page.get_by_role("button", name="Previous").click()
    expect(page.locator("#records article").first).to_have_attribute("data-offset", "9900")
    page.go_back()
    expect(page.locator("#records article").first).to_have_attribute("data-offset", "9950")
    page.get_by_label("Offset", exact=True).fill("5000")
    page.get_by_label("Offset", exact=True).press("Enter")
    expect(page.locator("#records article").first).to_have_attribute("data-offset", "5000")
    at = datetime.datetime.fromtimestamp((base + 7_321_000) / 1000, datetime.timezone.utc)
    page.get_by_label("Time (local)").fill(at.strftime("%Y-%m-%dT%H:%M:%S"))
    page.get_by_label("Time (local)").press("Enter")
    expect(page.locator("#records article").first).to_have_attribute("data-offset", "7321")
    # Every read was one page: the partition is never loaded whole.
    assert reads and all("max_records=50" in u for u in reads), reads


def test_group_lag_drops_after_the_group_consumes(server, page):
    create(server, "billing-in", 2)
    produce(server, "billing-in", [{"key": f"customer-{i}", "value": f"invoice {i}"} for i in range(60)])
    status, _ = server.request("POST", "/v1/groups/billing/topics/billing-in/poll?max_records=5")
    assert status == 200
    assert server.request("PUT", "/v1/groups/billing/topics/billing-in/offsets")[0] == 200
    _, group = server.request("GET", "/v1/groups/billing")
    lag = group["topics"][0]["total_lag"]
    assert 0 < lag < 60, group
    page.goto(server.base + "/ui#/groups")
    expect(page.locator("#groups tbody tr")).not_to_have_count(0)
    shot(page, "groups")
    page.get_by_role("link", name="billing", exact=True).click()
    head = page.locator('section[data-topic="billing-in"] .summary')
    expect(head).to_have_attribute("data-total-lag", str(lag))
    # Consume everything, then commit the positions.
    for _ in range(10):
        _, body = server.request("POST", "/v1/groups/billing/topics/billing-in/poll?max_records=1000")
        if not body["records"]:
            break
    assert server.request("PUT", "/v1/groups/billing/topics/billing-in/offsets")[0] == 200
    expect(head).to_have_attribute("data-total-lag", "0")
    expect(page.locator('section[data-topic="billing-in"] td.lag-value').first).to_have_text("0")
    # The lag sparkline has a line once two samples are in.
    expect(page.locator('section[data-topic="billing-in"] svg.spark polyline').first).to_be_attached()
    # Seek back to the start from the console: the lag is the whole topic again.
    section = page.locator('section[data-topic="billing-in"]')
    section.get_by_label("Seek to").select_option("earliest")
    section.get_by_role("button", name="Seek").click()
    expect(section.locator(".seek .note")).to_have_text(re.compile("Committed: p0 → 0, p1 → 0"))
    expect(head).to_have_attribute("data-total-lag", "60")
    section.get_by_label("Partition", exact=True).select_option("1")
    section.get_by_label("Seek to").select_option("offset")
    section.get_by_label("Offset", exact=True).fill("999999")
    section.get_by_role("button", name="Seek").click()
    _, problem = server.request("POST", "/v1/groups/billing/topics/billing-in/seek",
                                {"partition": 1, "to": {"offset": 999999}})
    expect(section.locator(".seek .error .detail")).to_have_text(problem["detail"])
    # A member joins: its generation, assignment and owner column show.
    status, joined = server.request("POST", "/v1/groups/billing/topics/billing-in/members",
                                    {"member_id": "worker-1", "session_timeout_ms": 60000})
    assert status == 201, joined
    expect(head).to_contain_text(f"generation {joined['generation']} · 1 member")
    member = section.locator("table.members tbody tr")
    expect(member).to_have_count(1)
    expect(member.locator("th")).to_have_text("worker-1")
    expect(member.locator("td").first).to_have_text(", ".join(map(str, joined["assignment"])))
    expect(section.locator('table.lag tr[data-partition="0"] td').first).to_have_text("worker-1")
    # Now a seek goes through the member.
    section.get_by_label("As member").select_option("worker-1")
    section.get_by_label("Partition", exact=True).select_option("")
    section.get_by_label("Seek to").select_option("latest")
    section.get_by_role("button", name="Seek").click()
    _, group = server.request("GET", "/v1/groups/billing")
    ends = ", ".join(f"p{p['partition']} → {p['high_watermark']}" for p in group["topics"][0]["partitions"])
    expect(section.locator(".seek .note")).to_have_text(f"Committed: {ends}")
    expect(head).to_have_attribute("data-total-lag", "0")
    assert unlabelled_controls(page) == []
    shot(page, "group")


def test_auth_token_prompt(tmp_path, page):
    server = Server(tmp_path / "data", token="s3cret-token")
    try:
        create(server, "guarded")
        page.goto(server.base + "/")
        dialog = page.locator("#token-dialog")
        expect(dialog).to_be_visible()
        shot(page, "token-prompt")
        page.get_by_label("Token", exact=True).fill("wrong")
        page.get_by_role("button", name="Sign in").click()
        expect(page.locator("#token-why")).to_contain_text("refused")
        expect(dialog).to_be_visible()
        page.get_by_label("Token", exact=True).fill("s3cret-token")
        page.get_by_role("button", name="Sign in").click()
        expect(dialog).to_be_hidden()
        expect(page.locator('section[data-topic="guarded"]')).to_be_visible()
        # Kept for the tab: a reload does not ask again.
        page.reload()
        expect(page.locator('section[data-topic="guarded"]')).to_be_visible()
        expect(dialog).to_be_hidden()
        # A token the server stops accepting brings the prompt back.
        page.evaluate("sessionStorage.setItem('kafko.console.token', 'revoked')")
        expect(dialog).to_be_visible(timeout=5000)
    finally:
        server.stop()


def test_narrow_window(server, page):
    create(server, "narrow", 2)
    produce(server, "narrow", [{"key": "k", "value": json.dumps({"a": list(range(40))})}])
    page.set_viewport_size({"width": 375, "height": 800})
    for route, ready in [("/ui", 'section[data-topic="narrow"]'),
                         ("/ui#/topic/narrow?p=0", "#records article"),
                         ("/ui#/groups", "#groups")]:
        page.goto(server.base + route)
        expect(page.locator(ready).first).to_be_visible()
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"{route} is {width}px wide in a 375px window"
    shot(page, "narrow-groups")
    page.goto(server.base + "/ui#/topic/narrow?p=0")
    expect(page.locator("#records article").first).to_be_visible()
    shot(page, "narrow-topic")


def test_docs_screenshot(tmp_path, page):
    """The README's picture: an overview with traffic (kept in the artifacts; docs/ has a
    copy). Runs on its own server so no other test's topics show."""
    server = Server(tmp_path / "data")
    stop = threading.Event()

    def traffic(topic, size, pause):
        i = 0
        while not stop.is_set():
            n = size + (i * 7) % (size + 1)
            produce(server, topic, [{"key": f"customer-{(i + j) % 17}", "value": json.dumps(
                {"order_id": 10_000 + i * 20 + j, "amount": round(12.5 + (i + j) % 40 * 3.25, 2),
                 "currency": "EUR"}), "headers": [{"name": "source", "value": "checkout"}]}
                for j in range(n)])
            i += 1
            time.sleep(pause)

    create(server, "orders", 3)
    create(server, "payments", 2)
    create(server, "audit-log", 1)
    produce(server, "payments", [{"value": f"payment {i}"} for i in range(1200)])
    produce(server, "audit-log", [{"value": json.dumps({"event": "login", "user": i})} for i in range(340)])
    threads = [threading.Thread(target=traffic, args=a, daemon=True)
               for a in (("orders", 12, 0.3), ("payments", 3, 0.5))]
    try:
        for t in threads:
            t.start()
        page.set_viewport_size({"width": 1280, "height": 720})
        page.goto(server.base + "/ui")
        expect(page.locator('section[data-topic="orders"]')).to_be_visible()
        # A minute fills the sparklines; the check takes a shorter look.
        page.wait_for_timeout(int(os.environ.get("KAFKO_UI_DOCS_WAIT_MS", "8000")))
        page.screenshot(path=str(ARTIFACTS / "console.png"))
        page.get_by_role("link", name="orders", exact=True).click()
        expect(page.locator("#records article").first).to_be_visible()
        page.get_by_role("button", name="Start live tail").click()
        page.wait_for_timeout(1500)
        page.screenshot(path=str(ARTIFACTS / "console-topic.png"))
    finally:
        stop.set()
        for t in threads:
            t.join()
        server.stop()


def zigzag(n):
    """Avro's long: zig-zag, then a varint."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def framed(schema_id, payload):
    """Confluent's wire format: magic byte 0, the id in 4 big-endian bytes, the payload."""
    return b"\x00" + schema_id.to_bytes(4, "big") + payload


def register(server, subject, body):
    status, answer = server.request("POST", f"/subjects/{subject}/versions", body)
    assert status == 200, answer
    return answer["id"]


def test_schemas_and_records_decoded_by_their_schema_id(server, page):
    order = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}
    v1 = register(server, "ui-orders-value", {"schema": json.dumps(order)})
    order["fields"].append({"name": "note", "type": "string", "default": ""})
    v2 = register(server, "ui-orders-value", {"schema": json.dumps(order)})
    person = register(server, "ui-people-value", {"schemaType": "JSON", "schema": json.dumps({"type": "object"})})
    proto = 'syntax = "proto3";\npackage acme;\nmessage Reading { string sensor = 1; int32 level = 2; }\n'
    reading = register(server, "ui-readings-value", {"schemaType": "PROTOBUF", "schema": proto})

    # The subjects, each with its latest version; one subject's versions and schemas.
    page.goto(server.base + "/ui#/schemas")
    row = page.locator('#subjects tr[data-subject="ui-orders-value"]')
    expect(row).to_contain_text("AVRO")
    expect(row.locator("td").nth(1)).to_have_text("2")
    expect(row.locator("td").nth(2)).to_have_text(str(v2))
    expect(page.locator('#subjects tr[data-subject="ui-readings-value"]')).to_contain_text("PROTOBUF")
    assert unlabelled_controls(page) == []
    row.get_by_role("link", name="ui-orders-value").click()
    expect(page.locator("#schema-meta")).to_have_text(re.compile(rf"^Version 2 · id {v2} · AVRO"))
    expect(page.locator("#schema-text")).to_contain_text('"note"')
    page.get_by_label("Version").select_option("1")
    expect(page.locator("#schema-meta")).to_have_text(re.compile(rf"^Version 1 · id {v1} · AVRO"))
    expect(page.locator("#schema-text")).not_to_contain_text('"note"')
    page.goto(server.base + "/ui#/subject/ui-readings-value")
    expect(page.locator("#schema-text")).to_contain_text("message Reading")
    shot(page, "schema")

    # Records in the wire format show decoded, with their schema's type and id.
    avro = framed(v1, zigzag(3) + b"o-1" + zigzag(-4))
    person_json = framed(person, b'{"name":"ada"}')
    proto_bytes = framed(reading, b"\x00" + b"\x0a\x02s1" + b"\x10\x07")
    records = [{"value": base64.b64encode(v).decode()} for v in (avro, person_json, proto_bytes, b"plain")]
    create(server, "ui-encoded")
    status, body = server.request("POST", "/v1/topics/ui-encoded/records?format=base64", {"records": records})
    assert 200 <= status < 300, body
    page.goto(server.base + "/ui#/topic/ui-encoded?p=0&o=0")
    article = lambda offset: page.locator(f'#records article[data-offset="{offset}"] dd.value')
    expect(article(0).locator(".schema-tag")).to_have_text(f"avro · schema {v1}")
    assert json.loads(article(0).locator("pre.decoded").text_content()) == {"id": "o-1", "qty": -4}
    expect(article(1).locator(".schema-tag")).to_have_text(f"json · schema {person}")
    assert json.loads(article(1).locator("pre.decoded").text_content()) == {"name": "ada"}
    expect(article(2).locator(".schema-tag")).to_have_text(f"protobuf · schema {reading} · acme.Reading")
    assert json.loads(article(2).locator("pre.decoded").text_content()) == {"sensor": "s1", "level": 7}
    expect(article(3)).to_have_text("plain")
    expect(article(3).locator(".schema-tag")).to_have_count(0)
    shot(page, "decoded-records")
