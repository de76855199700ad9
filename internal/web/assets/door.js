/*
 * waitroom: the door of a waiting page. It takes an invite from the URL
 * fragment (#invite=…, which browsers never send to a server), and in a room
 * that asks for proof of work it fetches a challenge, solves it in a Web
 * Worker (pow-worker.js) while showing progress, and joins with the
 * solution. On a waiting page already in the line, an invite in the
 * fragment is redeemed: the visitor moves into the invite's tier.
 */
'use strict';
(function () {
  var m = /(?:^#|&)invite=([^&]+)/.exec(location.hash);
  var invite = m ? decodeURIComponent(m[1]) : '';
  if (m && history.replaceState) {
    history.replaceState(null, '', location.pathname + location.search);
  }
  var door = document.getElementById('waitroom-door');
  if (!door) {
    // A waiting page: redeem an invite, if the link brought one.
    var page = document.getElementById('waitroom');
    if (!invite || !page) { return; }
    var f = document.createElement('form');
    f.method = 'post';
    f.action = location.pathname.replace(/\/+$/, '') + '/join';
    var i = document.createElement('input');
    i.type = 'hidden'; i.name = 'invite'; i.value = invite;
    f.appendChild(i);
    document.body.appendChild(f);
    f.submit();
    return;
  }
  var form = door.querySelector('[data-door="form"]');
  var field = form.querySelector('[name="invite"]');
  if (invite) { field.value = invite; }
  var url = door.getAttribute('data-challenge');
  var status = door.querySelector('[data-door="status"]');
  var bar = door.querySelector('[data-door="progress"]');
  // An invite opens the door by itself; so does a solved challenge.
  if (invite || !url) {
    if (invite) { form.submit(); }
    return;
  }
  var max = 0;
  var say = function (t) { if (status) { status.textContent = t; } };
  var worker = new Worker(door.getAttribute('data-worker') || '/waitroom/pow-worker.js');
  worker.onmessage = function (e) {
    var d = e.data || {};
    if (typeof d.progress === 'number' && bar) { bar.value = Math.round(d.progress * 100); }
    if (d.payload) {
      if (bar) { bar.value = 100; }
      say(door.getAttribute('data-done'));
      try { sessionStorage.setItem('waitroom-pow', JSON.stringify({ ms: d.ms, number: d.number, maxnumber: max })); } catch (x) { /* private mode */ }
      form.querySelector('[name="challenge"]').value = d.payload;
      form.submit();
    }
    if (d.error) { say(door.getAttribute('data-failed') + ' (' + d.error + ')'); }
  };
  fetch(url, { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
    if (!r.ok) { throw new Error('HTTP ' + r.status); }
    return r.json();
  }).then(function (ch) {
    max = ch.maxnumber;
    worker.postMessage({ challenge: ch });
  }).catch(function (err) {
    say(door.getAttribute('data-failed') + ' (' + err.message + ')');
  });
})();
