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
// <progress max="100">). The built-in assets/templates/page.html is the
// reference.
//
// # The JavaScript client
//
// GET /waitroom.js is a dependency-free client for apps that show the line
// in their own UI: Waitroom.join({room, base}) (or Waitroom.resume({room,
// base, id})) with callbacks onPosition, onAdmitted, onEnded and a leave()
// method; see the comment at the top of assets/waitroom.js.
//
// # The demo
//
// With Config.Demo, /demo/app/ is a sample app behind room "demo": it shows
// "you are in" with a Leave button (DELETE on the session) to visitors
// whose session is active and sends everyone else to /r/demo. /demo/ puts
// each browser tab in the demo line as one more person, through
// /waitroom.js, so one browser can watch the line move.
package web
