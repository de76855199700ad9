package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/browsertest"
)

// auditJS checks the page as it is shown now, in the page, and returns
// what is wrong, each line prefixed by the number of the check (issue 13):
// 1 every form control has an accessible name; 2 whatever acts on a click
// is a button or a link; 3 live regions, landmarks and one <h1>. It needs
// the DevTools command-line API (getEventListeners).
const auditJS = `(() => {
  const out = [];
  const shown = (e) => e.getClientRects().length > 0;
  const text = (s) => (s || "").replace(/\s+/g, " ").trim();
  const desc = (e) => {
    if (e === window) return "window";
    if (e === document) return "document";
    let s = e.tagName.toLowerCase();
    if (e.id) s += "#" + e.id;
    else if (typeof e.className === "string" && e.className) s += "." + e.className.trim().split(/\s+/).join(".");
    if (e.getAttribute("name")) s += '[name="' + e.getAttribute("name") + '"]';
    return s;
  };
  const byIds = (ids) => text(ids.split(/\s+/).map((id) => {
    const r = document.getElementById(id);
    return r ? r.textContent : "";
  }).join(" "));

  // 1. An accessible name for every form control, shown or not.
  for (const e of document.querySelectorAll("input, select, textarea")) {
    if (e.type === "hidden") continue;
    const name = (e.hasAttribute("aria-labelledby") && byIds(e.getAttribute("aria-labelledby"))) ||
      text(e.getAttribute("aria-label")) ||
      text([...(e.labels || [])].map((l) => l.textContent).join(" "));
    if (!name) out.push("1: " + desc(e) + " has no accessible name (no <label>, aria-label or aria-labelledby)");
  }

  // 2. Only buttons and links (and form controls and their labels) act
  // on a click; whatever claims a role is focusable.
  const native = (e) => e instanceof HTMLButtonElement || (e instanceof HTMLAnchorElement && e.hasAttribute("href")) ||
    e instanceof HTMLInputElement || e instanceof HTMLSelectElement || e instanceof HTMLTextAreaElement ||
    e instanceof HTMLLabelElement || e instanceof HTMLOptionElement || e.tagName === "SUMMARY";
  for (const e of document.querySelectorAll("[onclick], [ondblclick], [onmousedown], [onmouseup], [onpointerdown], [onpointerup], [ontouchstart], [ontouchend]")) {
    if (!native(e)) out.push("2: " + desc(e) + " has an inline click handler but is not a button or link");
  }
  for (const e of document.querySelectorAll("[role=button], [role=link], [role=checkbox], [role=radio], [role=tab], [role=menuitem], [role=switch]")) {
    if (!native(e) && e.tabIndex < 0) out.push("2: " + desc(e) + " has role=" + e.getAttribute("role") + " but cannot be focused");
  }
  for (const e of document.querySelectorAll("[tabindex]")) {
    if (e.tabIndex > 0) out.push("2: " + desc(e) + " has a positive tabindex, out of the reading order");
  }
  const CLICKS = ["click", "dblclick", "auxclick", "mousedown", "mouseup", "pointerdown", "pointerup", "touchstart", "touchend"];
  if (typeof getEventListeners !== "function") {
    out.push("2: getEventListeners is not available: cannot check the click handlers");
  } else {
    for (const e of [window, document, ...document.querySelectorAll("*")]) {
      const ls = getEventListeners(e);
      const types = CLICKS.filter((t) => ls[t] && ls[t].length);
      if (types.length && !(e instanceof Element && native(e))) {
        out.push("2: " + desc(e) + " listens for " + types.join(", ") + " but is not a button or link");
      }
    }
  }

  // 3. Landmarks, one <h1>, live regions for what changes by itself.
  for (const [role, sel] of [["banner", "body > header, [role=banner]"], ["main", "main, [role=main]"], ["navigation", "nav, [role=navigation]"]]) {
    if (![...document.querySelectorAll(sel)].some(shown)) out.push("3: no " + role + " landmark shown");
  }
  const mains = [...document.querySelectorAll("main, [role=main]")].filter(shown);
  if (mains.length > 1) out.push("3: " + mains.length + " main landmarks");
  const h1s = [...document.querySelectorAll("h1")].filter(shown);
  if (h1s.length !== 1) out.push("3: " + h1s.length + " <h1> shown, want 1");
  else if (!text(h1s[0].textContent)) out.push("3: the <h1> is empty");
  const politeness = (e) => {
    for (let n = e; n; n = n.parentElement) {
      const live = n.getAttribute("aria-live");
      if (live) return live;
      const role = n.getAttribute("role");
      if (role === "status" || role === "log" || role === "marquee" || role === "timer") return "polite";
      if (role === "alert") return "assertive";
    }
    return "off";
  };
  const wantLive = ["notice"];
  if (shown(document.getElementById("view-rooms"))) wantLive.push("rooms-status");
  if (shown(document.getElementById("view-room"))) {
    wantLive.push("live-status", "stat-waiting", "stat-active", "stat-admissions", "stat-joins", "stat-abandons",
      "stat-eta", "stat-p50", "stat-p90", "stat-p99", "stat-esterr", "found");
  }
  for (const id of wantLive) {
    const e = document.getElementById(id);
    const p = e ? politeness(e) : "missing";
    if (p !== "polite") out.push("3: #" + id + " is not in a polite live region (aria-live " + p + ")");
  }
  for (const id of ["error", "signin-error"]) {
    const e = document.getElementById(id);
    if (!e || politeness(e) === "off") out.push("3: #" + id + " is not announced (no live region)");
  }

  // A dialog shown: it has a name and holds the focus.
  for (const d of document.querySelectorAll("dialog[open]")) {
    const name = (d.hasAttribute("aria-labelledby") && byIds(d.getAttribute("aria-labelledby"))) || text(d.getAttribute("aria-label"));
    if (!name) out.push("3: " + desc(d) + " has no accessible name");
    if (!d.contains(document.activeElement)) out.push("4: " + desc(d) + " is open but the focus is on " + desc(document.activeElement));
  }
  return out;
})()`

// phoneJS checks the page on a narrow screen: nothing wider than it
// (a table scrolled within its own region aside), and every control
// shown at least 24 by 24 CSS pixels (WCAG 2.2, 2.5.8).
const phoneJS = `(() => {
  const out = [];
  const W = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > W) out.push("6: the page is " + document.documentElement.scrollWidth + "px wide on a " + W + "px screen");
  const desc = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.getAttribute("name") ? '[name="' + e.getAttribute("name") + '"]' : "") +
    (e.textContent.trim() ? ' "' + e.textContent.trim().slice(0, 30) + '"' : "");
  const clipped = (e) => {
    for (let n = e.parentElement; n && n !== document.body; n = n.parentElement) {
      const o = getComputedStyle(n).overflowX;
      if (o !== "visible") return true;
    }
    return false;
  };
  for (const e of document.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.right <= 0 || clipped(e)) continue;
    if (r.right > W + 0.5) out.push("6: " + desc(e) + " reaches " + Math.round(r.right) + "px on a " + W + "px screen");
  }
  for (const e of document.querySelectorAll("button, a[href], input, select, textarea, summary, [role=button], [tabindex]")) {
    if (e.tabIndex < 0 || e.type === "hidden") continue;
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= 0 || r.bottom <= 0) continue; // not shown, or off-screen until focused
    if (r.height < 24 || r.width < 24) out.push("6: " + desc(e) + " is " + r.width.toFixed(1) + "×" + r.height.toFixed(1) + "px, under 24×24");
  }
  return out;
})()`

// ringJS says whether the focused element shows a focus indicator, and
// which it is.
const ringJS = `(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return "no focus";
  const s = getComputedStyle(e);
  const d = e.tagName.toLowerCase() + (e.id ? "#" + e.id : "");
  if (s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0) return "ok " + d;
  if (s.boxShadow && s.boxShadow !== "none") return "ok " + d;
  return "none " + d + " (outline " + s.outlineStyle + " " + s.outlineWidth + ", box-shadow " + s.boxShadow + ")";
})()`

// activeJS names the focused element.
const activeJS = `(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return "body";
  return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.getAttribute("href") ? '[href="' + e.getAttribute("href") + '"]' : "");
})()`

// strings evaluates expr, which returns an array of strings.
func (tb *tab) strings(what, expr string) []string {
	tb.t.Helper()
	out, err := browsertest.Eval[[]string](tb.Tab, 5*time.Second, expr, chromedp.EvalWithCommandLineAPI)
	if err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
	return out
}

func (tb *tab) str(expr string) string {
	tb.t.Helper()
	return browsertest.MustEval[string](tb.Tab, 3*time.Second, expr)
}

// audit runs checks 1 to 3 on the page as shown, in the DOM and in
// Chromium's own accessibility tree.
func (tb *tab) audit(view string) {
	tb.t.Helper()
	for _, p := range tb.strings("auditing "+view, auditJS) {
		tb.t.Errorf("%s: %s", view, p)
	}
	for _, p := range tb.axNames() {
		tb.t.Errorf("%s: 1: %s", view, p)
	}
}

// namedRoles are the roles of controls, which need a name to be used
// with a screen reader.
var namedRoles = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "spinbutton": true, "combobox": true,
	"checkbox": true, "radio": true, "switch": true, "slider": true, "tab": true, "menuitem": true, "dialog": true,
}

// axNames lists the controls in Chromium's accessibility tree that a
// screen reader reaches and that have no name.
func (tb *tab) axNames() []string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.Ctx, 5*time.Second)
	defer cancel()
	tree, err := chromedp.Call(ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		tb.t.Fatalf("reading the accessibility tree: %v", err)
	}
	var out []string
	for _, n := range tree.Nodes {
		if n.Ignored || n.Role == nil {
			continue
		}
		var role, name string
		_ = json.Unmarshal(n.Role.Value, &role)
		if !namedRoles[role] {
			continue
		}
		if n.Name != nil {
			_ = json.Unmarshal(n.Name.Value, &name)
		}
		if strings.TrimSpace(name) != "" {
			continue
		}
		what := fmt.Sprintf("%s (backend node %d)", role, n.BackendDOMNodeID)
		if d, err := chromedp.Call(ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: n.BackendDOMNodeID}); err == nil && d.Node != nil {
			what = role + " " + strings.ToLower(d.Node.NodeName)
			for i := 0; i+1 < len(d.Node.Attributes); i += 2 {
				if d.Node.Attributes[i] == "id" {
					what += "#" + d.Node.Attributes[i+1]
				}
			}
		}
		out = append(out, "the accessibility tree has a "+what+" with no name")
	}
	return out
}

// key presses keys (see chromedp/kb) on whatever has the focus.
func (tb *tab) key(what, keys string) {
	tb.t.Helper()
	tb.must(what, chromedp.KeyEvent(keys))
}

// ring fails the test unless the focused element shows where it is.
func (tb *tab) ring(what string) {
	tb.t.Helper()
	if got := tb.str(ringJS); !strings.HasPrefix(got, "ok ") {
		tb.t.Errorf("5: %s: the focus is not visible: %s", what, got)
	}
}

// tabTo presses Tab until sel has the focus, checking that every element
// it passes shows the focus.
func (tb *tab) tabTo(sel string) {
	tb.t.Helper()
	for range 60 {
		tb.key("Tab towards "+sel, "\t")
		if ok, _ := tb.eval(fmt.Sprintf(`document.activeElement.matches(%q)`, sel)); ok {
			tb.ring("tabbing to " + sel)
			return
		}
		if got := tb.str(ringJS); got != "no focus" && !strings.HasPrefix(got, "ok ") {
			tb.t.Errorf("5: tabbing to %s: the focus is not visible: %s", sel, got)
		}
	}
	tb.shot("failed")
	tb.t.Fatalf("4: 60 presses of Tab did not reach %s (focus on %s)", sel, tb.str(activeJS))
}

// focusOn waits for the focus to be on sel.
func (tb *tab) focusOn(what, sel string) {
	tb.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ok, _ := tb.eval(fmt.Sprintf(`document.activeElement && document.activeElement.matches(%q)`, sel)); ok {
			return
		}
		if time.Now().After(deadline) {
			tb.shot("failed")
			tb.t.Fatalf("4: %s: the focus is on %s, want %s", what, tb.str(activeJS), sel)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// phone checks the page at the width of a phone, then goes back to the
// desktop size.
func (tb *tab) phone(view string) {
	tb.t.Helper()
	if _, err := chromedp.Call(tb.Ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: 375, Height: 800, DeviceScaleFactor: 2, Mobile: true}); err != nil {
		tb.t.Fatal(err)
	}
	defer func() {
		if _, err := chromedp.Call(tb.Ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
			tb.t.Fatal(err)
		}
	}()
	tb.waitFor("a phone-sized layout", `document.documentElement.clientWidth === 375`)
	tb.shot("a11y-phone-" + strings.ReplaceAll(view, " ", "-"))
	for _, p := range tb.strings("measuring "+view+" on a phone", phoneJS) {
		tb.t.Errorf("%s on a phone: %s", view, p)
	}
}

// TestConsoleAccessible checks, in a real browser, that the console can
// be used by keyboard and screen reader, and on a phone (issue 13): the
// sign-in, rooms and room views, the confirmation dialog, the
// configuration form, the find results and the invites made.
func TestConsoleAccessible(t *testing.T) {
	_, api, srv := newPageSite(t)
	tb := newTab(t)
	calls := func(want int, what string) {
		t.Helper()
		if got := api.callsSoFar(); len(got) != want {
			t.Errorf("4: after %s the page made %d changes, want %d: %v", what, len(got), want, got)
		}
	}
	// settle gives a request a keyboard action might have sent time to
	// arrive before calls counts them.
	settle := func() { time.Sleep(300 * time.Millisecond) }

	// Sign in with the keyboard alone.
	tb.must("opening the console", chromedp.Navigate(srv.URL+"/admin/"))
	tb.waitFor("the sign-in form", `!document.querySelector("#view-signin").hidden`)
	tb.audit("sign-in view")
	tb.phone("sign-in view")
	tb.must("typing the token", chromedp.Focus(chromedp.CSS("#token")), chromedp.KeyEvent(token))
	tb.ring("the token field")
	tb.key("Enter in the token field", "\r")
	tb.waitFor("the rooms table", `document.querySelector('#rooms-body tr[data-room="demo"]')`)
	tb.focusOn("the rooms view opened", "#rooms-title")
	tb.audit("rooms view")
	tb.phone("rooms view")

	// Open the room: Tab to its link, Enter.
	tb.tabTo(`tr[data-room="demo"] a`)
	tb.key("Enter on the room's link", "\r")
	tb.waitFor("the live room view", `location.hash === "#/rooms/demo" && document.querySelector("#live-status").textContent === "Live."`)
	tb.waitFor("the headline", `document.querySelector("#stat-waiting").textContent === "7"`)
	tb.focusOn("the room view opened", "#room-title")
	tb.waitFor("the webhooks panel", `document.querySelector('#webhooks-list li[data-webhook="orders"]') && document.querySelector('#dead-list li[data-dead="msg_7"]')`)
	tb.audit("room view")

	// Pause: Tab to it, Enter opens the dialog with the focus in it,
	// Escape closes it without pausing and gives the focus back.
	tb.tabTo("#pause")
	tb.key("Enter on pause", "\r")
	tb.waitFor("the pause dialog", `document.querySelector("#confirm").open`)
	tb.focusOn("the dialog opened", "#confirm button")
	tb.ring("the dialog's first button")
	tb.audit("confirm dialog")
	tb.key("Escape in the dialog", "\u001b")
	tb.waitFor("the dialog to close", `!document.querySelector("#confirm").open`)
	tb.focusOn("the dialog closed by Escape", "#pause")
	settle()
	calls(0, "Escape in the pause dialog")

	// Space opens it again; Tab to the OK button, Enter pauses.
	tb.key("Space on pause", " ")
	tb.waitFor("the pause dialog again", `document.querySelector("#confirm").open`)
	tb.focusOn("the dialog opened by Space", "#confirm button")
	tb.tabTo("#confirm-ok")
	tb.key("Enter on OK", "\r")
	tb.waitFor("the dialog to close", `!document.querySelector("#confirm").open`)
	tb.waitFor("the room to be paused", `!document.querySelector("#resume").hidden && document.querySelector("#pause").hidden`)
	// The pause button is gone: the focus is on the one that replaced it.
	tb.focusOn("the room paused", "#resume")
	if c := api.callsSoFar(); len(c) != 1 || c[0].method != "POST" || c[0].path != "/v1/rooms/demo/pause" {
		t.Errorf("4: the keyboard pause sent %v, want one POST …/pause", c)
	}

	// Find by keyboard; the results and the controls on them.
	tb.must("finding ticket 5", chromedp.Focus(chromedp.CSS("#find-q")), chromedp.KeyEvent("5\r"))
	tb.waitFor("the found session", `document.querySelector('#found article[data-session="AAAAAAAAAAUsessionidforfive"]') && !document.querySelector("#session-actions").hidden`)
	tb.audit("find results")
	tb.must("finding two sessions", chromedp.Evaluate[chromedp.Void](`document.querySelector("#find-q").value = ""`),
		chromedp.Focus(chromedp.CSS("#find-q")), chromedp.KeyEvent("user\r"))
	tb.waitFor("two found sessions", `document.querySelectorAll('#found input[name="found-pick"]').length === 2`)
	tb.audit("find results, two sessions")

	// Revoke: Escape does nothing; Enter on OK revokes; the focus comes
	// back to the revoke button both times.
	tb.tabTo("#revoke")
	tb.key("Enter on revoke", "\r")
	tb.waitFor("the revoke dialog", `document.querySelector("#confirm").open`)
	tb.focusOn("the revoke dialog opened", "#confirm button")
	tb.key("Escape in the revoke dialog", "\u001b")
	tb.waitFor("the dialog to close", `!document.querySelector("#confirm").open`)
	tb.focusOn("the revoke dialog closed by Escape", "#revoke")
	settle()
	calls(1, "Escape in the revoke dialog")
	tb.key("Enter on revoke", "\r")
	tb.waitFor("the revoke dialog", `document.querySelector("#confirm").open`)
	tb.tabTo("#confirm-ok")
	tb.key("Enter on OK", "\r")
	tb.waitFor("the revoke to finish", `document.querySelector("#notice").textContent.includes("revoked")`)
	tb.focusOn("the revoke done", "#revoke")
	if c := api.callsSoFar(); len(c) != 2 || c[1].method != "DELETE" {
		t.Errorf("4: the keyboard revoke sent %v, want a DELETE", c)
	}

	// Make an invite by keyboard: the links it made get the focus.
	tb.tabTo("#inv-count")
	tb.tabTo("#invites-make")
	tb.key("Enter on make invites", "\r")
	tb.waitFor("the invite links", `!document.querySelector("#invites-result").hidden`)
	tb.focusOn("the invites made", "#invites-links")
	tb.ring("the invite links")
	if got := tb.text("#invites-summary"); !strings.HasPrefix(got, "1 invite, good for 1 join until") {
		t.Errorf("#invites-summary reads %q, want 1 invite (no tier: the room has none)", got)
	}
	tb.audit("invites made")
	if c := api.callsSoFar(); len(c) != 3 || c[2].method != "POST" || c[2].path != "/v1/rooms/demo/invites" {
		t.Errorf("4: the keyboard invite sent %v, want a POST of invites", c)
	}
	tb.tabTo("#invites-copy")

	// The configuration form, by keyboard.
	tb.must("focusing edit", chromedp.Focus(chromedp.CSS("#edit")))
	tb.key("Enter on edit", "\r")
	tb.waitFor("the configuration form", `!document.querySelector("#config-form").hidden`)
	tb.focusOn("the form opened", "#cfg-mode")
	tb.ring("the mode select")
	tb.audit("configuration form")
	tb.phone("room view")

	// Tab through the whole room view: every stop shows the focus.
	tb.must("focusing the heading", chromedp.Focus(chromedp.CSS("#room-title")))
	seen := map[string]bool{}
	for range 120 {
		tb.key("Tab", "\t")
		at := tb.str(activeJS)
		if at == "body" || seen[at] {
			break
		}
		seen[at] = true
		if got := tb.str(ringJS); !strings.HasPrefix(got, "ok ") {
			t.Errorf("5: the focus is not visible: %s", got)
		}
	}
	if len(seen) < 20 {
		t.Errorf("4: Tab went through only %d elements of the room view: %v", len(seen), seen)
	}

	// Sign out by keyboard.
	tb.must("focusing sign out", chromedp.Focus(chromedp.CSS("#signout")))
	tb.key("Enter on sign out", "\r")
	tb.waitFor("the sign-in form again", `!document.querySelector("#view-signin").hidden`)
	tb.focusOn("signed out", "#token")

	for _, p := range tb.ConsoleProblems() {
		// Before signing in, the page asks whether it is: 401.
		if strings.Contains(p, "status of 401") && strings.Contains(p, "/admin/api/session") {
			continue
		}
		t.Errorf("browser console: %s", p)
	}
}
