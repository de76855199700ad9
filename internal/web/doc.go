// Package web serves waitroom's waiting page, its JavaScript client and the
// demo, all embedded in the binary (no CDN, no web fonts).
//
// # The waiting page
//
// GET /r/{room} joins the room, or resumes the visitor's session from the
// cookie waitroom-sid-<room> (HttpOnly, SameSite=Lax, Path=/, Secure over
// TLS); a session that ended, or a cookie that names none, joins anew. An
// active session is redirected (303) to ?return_to= when that URL's origin
// is one of the room's return_origins, else to the room's target_url; any
// other return_to is ignored, so the page is no open redirect. Without a
// target the page says "You're in". A waiting session sees its position,
// the people ahead, the total waiting, the ETA range when there is one and
// a progress indicator. An unknown room gets a 404 page, a malformed room
// name a 400 page, a store that is down a 503 page that retries by itself.
//
// A scheduled room (a "drop", one with opens_at) takes joins into a
// pre-queue until it opens. The page of a session in it counts down to the
// opening, says how many are in the draw, and explains that at the opening
// everyone in the pre-queue gets a place in a random order anyone can check
// (it links the draw record, GET /v1/rooms/{room}/draw), so there is no
// need to hurry. When the draw gives the session its place, the page turns
// into the usual one in place and notes that the place was drawn at
// random. A join after the room's closes_at gets a 409 page that says the
// line is closed, with the server's message.
//
// In a room with an inventory (stock), a waiting page says about how many
// units are left ("About 12 left"), and says plainly when the visitor may
// not get one: more people are ahead than units are left, or everything
// left is reserved (units come back when people leave without buying, so
// the visitor keeps their place). Once everything is sold, the line ends
// with end_reason "sold_out" and the page says "Sold out" in place (the
// aria-live region says it once; changes of the count are never read out,
// only crossing into "may not get one"); a join after that gets a 409 page
// that says it is sold out, with the server's message.
//
// # Held places
//
// In a room with hold_places a trusted backend joins a session with a
// contact (POST /v1/rooms/{room}/sessions with the admin token and
// "contact"); when its turn comes it is invited until claim_by, and the
// backend sends its person the claim link (the webhook session.invited
// carries claim_path, and claim_url when the server knows its public URL).
// GET /claim/{room}/{id} is that link's page: "It's your turn" with the
// time left and a button, a form that posts to the same URL. Reading the
// page claims nothing (mail and chat scanners fetch links); the POST
// claims the place, stores its id in the room's cookie and redirects (303)
// to the waiting page, which sends the now active session to the target
// like anyone admitted. A place whose turn has not come gets a page with
// its position (200, or 409 to the button), one that ended gets "This
// invitation has expired" (410), an unknown or forged id a 404 page. The
// claim page is built in; it reloads itself every 30 seconds while it may
// change by itself. When the waiting page (/r/{room}) finds its cookie
// naming an invited place, it shows the claim page instead, and the live
// page reloads into it the moment the place is invited.
//
// The page works without JavaScript: <noscript><meta http-equiv="refresh">
// reloads it every 5 to 10 seconds (a third of the room's waiting_timeout),
// and every load counts as presence. With JavaScript, /waitroom/page.js
// follows the session's Server-Sent Events stream, updates the figures in
// place, announces a new position in an aria-live region, goes to the
// target the moment the session is admitted, sends an away beacon on
// pagehide and reconnects after a back/forward-cache restore.
//
// Pages speak English, German and French, chosen by Accept-Language
// (quality values honoured, English as the fallback); each language is one
// Messages table in i18n.go.
//
// Every page is sent with Content-Security-Policy "default-src 'self'"
// (scripts and styles only from this origin or with the page's nonce, no
// framing), X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer,
// X-Frame-Options: DENY and Cache-Control: no-store.
//
// # Operator templates
//
// Config.Templates names a folder whose templates replace the built-in page:
// <room>.html for one room, page.html for every other room. Files named
// _<name>.html are partials available to both. They are html/template
// templates, parsed together with the built-in partials (so
// {{template "waitroom-head" .}} writes the charset, viewport and built-in
// style sheet), checked at startup by running them on sample pages in every
// state, and executed with a *Page:
//
//	.Lang          "en", "de" or "fr": the language chosen from Accept-Language
//	.T             the Messages of that language ({{.T.Heading}}, {{.T.PositionLabel}} …)
//	.Room          the room's name
//	.Status        "waiting", "active" (admitted, only when there is no target) or "served" (manual rooms)
//	.Session       the waitroom.Session: .ID .Ticket .Position .Waiting .Active .Capacity .ETA .JoinedAt …
//	.Position      the position, formatted for the language ("" unless waiting)
//	.Ahead         people ahead, formatted ("" unless waiting)
//	.Waiting       people waiting in the room, formatted
//	.Active        sessions active in the room, formatted
//	.Capacity      the room's capacity, formatted
//	.Announcement  the sentence for the aria-live region ("You are number 3 in line. 2 people are ahead of you.")
//	.ETA, .HasETA  the estimated wait as text, and whether there is an estimate
//	.Progress, .HasProgress  0 to 100, and whether there is an estimate to base it on
//	.Target        where an admitted visitor goes ("" for none)
//	.Refresh       seconds for <noscript><meta http-equiv="refresh" content="{{.Refresh}}"></noscript> (0: none)
//	.DocTitle      a document title ("No. 3 in line · Waiting room")
//	.PreQueue      whether the session waits in a scheduled room's pre-queue (no place until the draw)
//	.Countdown     the time to the opening as a clock ("59:58"; "" unless .PreQueue)
//	.OpensAt, .OpensAtISO  the opening as text ("2030-01-01 00:00 UTC") and in RFC 3339
//	.EntrantsText  the pre-queue's size as a sentence ("1,234 people are in the draw")
//	.Drawn         whether the session's place was drawn at random
//	.DrawURL       the room's public draw record
//	.Stock         "likely", "unlikely" or "reserved" in a room with an inventory ("" without one)
//	.Remaining     units neither sold nor reserved, formatted ("" without an inventory)
//	.StockLeft     "About 12 left" ("" when none is left or without an inventory)
//	.StockNote     why the visitor may not get one ("" unless .Stock is "unlikely" or "reserved")
//	.Nonce         the CSP nonce: <script nonce="{{.Nonce}}"> and <style nonce="{{.Nonce}}"> may be inline
//	.Script        URL of /waitroom.js
//	.PageScript    URL of the live-update script (load after .Script)
//	.Style         URL of the built-in style sheet
//	.EventsURL     the session's SSE stream path
//	.SessionURL    the session's API path
//	.AwayURL       the session's away-beacon path
//	.JoinURL       where a "join again" form posts (POST /r/{room})
//	.Data          the data-* attributes the live-update script reads: <main id="waitroom" {{.Data}}>
//
// For live updates a template loads .Script and .PageScript, puts .Data on
// the element with id="waitroom", and marks elements with
// data-waitroom="position", "ahead", "waiting", "active", "capacity", "eta",
// "announce" (make it role="status" aria-live="polite") or "progress" (a
// <progress max="100">). For scheduled rooms, the script also shows the
// elements marked "prequeue" (hiding "line") while the session waits for
// the draw and the other way round after it, counts down in "countdown",
// writes the opening in local time in "opens-at" (a <time>), the
// pre-queue's size in "entrants" and the heading in "heading", and after
// the draw shows "drawn" instead of "intro". In rooms with an inventory it
// writes "stock" and "stock-note" (each hidden while empty) inside
// "stock-box" (hidden without an inventory), and when the line sells out
// it puts "Sold out" in "heading" and "announce" and hides "line",
// "prequeue" and "stock-box". The built-in
// assets/templates/page.html is the reference.
//
// # The JavaScript client
//
// GET /waitroom.js is a dependency-free client for apps that show the line
// in their own UI: Waitroom.join({room, base}) (or Waitroom.resume({room,
// base, id})) with callbacks onPosition, onInvited (a held place's turn),
// onAdmitted, onEnded and a leave() method; see the comment at the top of
// assets/waitroom.js. GET /waitroom.d.ts is its TypeScript declarations
// (assets/waitroom.d.ts); the Node tests in jstest/ check both.
//
// # The demo
//
// With Config.Demo, /demo/app/ is a sample app behind room "demo": it shows
// "you are in" with a Leave button (DELETE on the session) to visitors
// whose session is active and sends everyone else to /r/demo. /demo/ puts
// each browser tab in the demo line as one more person, through
// /waitroom.js, so one browser can watch the line move.
package web
