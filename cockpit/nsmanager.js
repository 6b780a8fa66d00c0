/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The "User views" page of Cockpit: nsmanagerd's namespaces, their mount trees and peer
 * groups, and the changes an administrator (or a user, on their own view) may make.
 *
 * It talks to the daemon only through cockpit.dbus() and refuses nothing itself: which
 * actions are offered comes from the daemon's Can(), every refusal from the daemon (through
 * polkit) with its own message. Text the daemon sends (user names are tame, mount points
 * and sources are not: a user chooses them, and the daemon escapes what is not UTF-8 or a
 * control character) only ever goes into the page as textContent or an attribute value,
 * never as markup.
 *
 * What a click acts on is what the row showed: the mounts come from GetMountsEx, and the
 * actions on a mount go by its id (UnmountById, SetPropagationById; Eject by the device number
 * the kernel gave, never the source text) after a confirmation that names it; no row moves
 * while the pointer or the focus is in the table (a change marks vanished rows gone and holds
 * new ones behind a banner). */

"use strict";

(function () {
    const BUS_NAME = "org.example.NSManager";
    const MANAGER_PATH = "/org/example/NSManager";
    const MANAGER_IFACE = "org.example.NSManager.Manager";
    const NAMESPACE_IFACE = "org.example.NSManager.Namespace";
    const PROPERTIES_IFACE = "org.freedesktop.DBus.Properties";

    /* The actions of the page and the Manager methods they call (Can() is asked about these). */
    const VIEW_ACTIONS = ["ShareSubtree", "EnslaveSubtree", "SetPropagationById", "UnmountById", "BindMount", "Eject"];

    let client = null;
    const state = {
        namespaces: [],          /* { user, uid, state, path, props } sorted by user */
        selected: null,          /* null: no view shown; "": the host; else a user */
        mounts: [],              /* GetMountsEx(selected), as objects (mountEntry()) */
        hostMounts: [],          /* GetMountsEx("") */
        pending: null,           /* { mounts, hostMounts } read while the table was held */
        pointerInTable: false,
        can: new Map(),          /* "method\nuser" -> Promise of "yes" | "challenge" | "no" */
        counts: new Map(),       /* view path -> its number of mounts, the latest heard (GetAll or MountCountsChanged) */
        canErrors: new Set(),
    };

    /* ---- small helpers ---- */

    function $(id) {
        return document.getElementById(id);
    }

    /* An element with text (never markup) and attributes. */
    function el(tag, attrs, ...children) {
        const e = document.createElement(tag);
        for (const [k, v] of Object.entries(attrs || {})) {
            if (v === undefined || v === null || v === false)
                continue;
            if (k === "class")
                e.className = v;
            else
                e.setAttribute(k, v === true ? "" : String(v));
        }
        for (const c of children) {
            if (c === null || c === undefined)
                continue;
            e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
        }
        return e;
    }

    function svg(tag, attrs, text) {
        const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
        for (const [k, v] of Object.entries(attrs || {}))
            e.setAttribute(k, String(v));
        if (text !== undefined)
            e.textContent = text;
        return e;
    }

    function clear(node) {
        while (node.firstChild)
            node.removeChild(node.firstChild);
    }

    /* cockpit's promises as native ones. */
    function call(path, iface, method, args, options) {
        return new Promise((resolve, reject) => {
            client.call(path, iface, method, args, options).then(resolve, reject);
        });
    }

    function managerCall(method, args, options) {
        return call(MANAGER_PATH, MANAGER_IFACE, method, args, options);
    }

    function errorName(err) {
        return (err && err.name) ? err.name : "";
    }

    function errorMessage(err) {
        if (err && err.message)
            return err.message;
        return cockpit.message(err);
    }

    function viewName(user) {
        return user === "" ? "the host" : user + "'s view";
    }

    /* ---- alerts ---- */

    function showAlert(kind, title, text, detail) {
        const close = el("button", { type: "button", class: "pf-c-button pf-m-plain", "aria-label": "Close: " + title }, "×");
        const alert = el("div", { class: "pf-c-alert pf-m-" + kind, role: kind === "danger" ? "alert" : "status" },
                         el("p", { class: "pf-c-alert__title" }, title),
                         el("div", { class: "pf-c-alert__action" }, close),
                         text ? el("div", { class: "pf-c-alert__description" }, text) : null,
                         detail ? el("div", { class: "pf-c-alert__description nsm-error-name" }, detail) : null);
        close.addEventListener("click", () => alert.remove());
        $("alerts").appendChild(alert);
        return alert;
    }

    function showError(what, err) {
        return showAlert("danger", what, errorMessage(err), errorName(err));
    }

    /* ---- Can() ---- */

    function can(method, user) {
        const key = method + "\n" + user;
        if (!state.can.has(key)) {
            state.can.set(key, managerCall("Can", [method, user]).then(r => r[0], err => {
                /* No answer (polkit not running, too many questions): offer nothing, say why once. */
                const text = errorMessage(err);
                if (!state.canErrors.has(text)) {
                    state.canErrors.add(text);
                    showError("Cannot ask the daemon what you may do", err);
                }
                state.can.delete(key);
                return "no";
            }));
        }
        return state.can.get(key);
    }

    /* A button for a daemon call: disabled until Can() answers, then enabled on yes or
     * challenge (with a hint that a password will be asked for). */
    function actionButton(label, ariaLabel, method, user, onClick, kind) {
        const b = el("button", { type: "button", class: "pf-c-button " + (kind || "pf-m-secondary") + " pf-m-small",
                                 "aria-label": ariaLabel, disabled: true, "data-method": method, "data-can": "pending" },
                     label);
        b.addEventListener("click", onClick);
        can(method, user).then(answer => {
            b.setAttribute("data-can", answer);
            b.disabled = !(answer === "yes" || answer === "challenge");
            if (answer === "challenge")
                b.title = "Needs authentication";
            else if (answer === "no")
                b.title = "Not permitted";
        });
        return b;
    }

    /* Runs a change: an error shows the daemon's own message; the page then shows what is. */
    function change(what, method, args, user) {
        return can(method, user).then(answer => {
            const options = answer === "challenge" ? { flags: "i" } : undefined;
            return managerCall(method, args, options);
        }).then(result => {
            state.can.clear();
            return result;
        }, err => {
            showError(what + " failed", err);
            throw err;
        }).finally(refresh);
    }

    /* ---- the namespaces ---- */

    function loadNamespaces() {
        return managerCall("ListNamespaces", []).then(([list]) => Promise.all(list.map(([user, uid, st, path]) =>
            call(path, PROPERTIES_IFACE, "GetAll", [NAMESPACE_IFACE])
                    .then(([props]) => {
                        /* Newer than any MountCountsChanged heard before it, older than any after. */
                        if (props.NMounts)
                            state.counts.set(path, props.NMounts.v);
                        return { user, uid, state: st, path, props };
                    },
                          () => ({ user, uid, state: st, path, props: {} })))));
    }

    function prop(ns, name, fallback) {
        const v = ns.props[name];
        return v === undefined ? fallback : v.v;
    }

    function renderNamespaces() {
        const body = $("namespaces-body");
        clear(body);
        $("namespaces-empty").hidden = state.namespaces.length > 0;
        for (const ns of state.namespaces) {
            const sessions = prop(ns, "Sessions", []);
            const linger = prop(ns, "Linger", false);
            const show = el("button", { type: "button", class: "pf-c-button pf-m-link pf-m-inline nsm-user",
                                        "aria-label": "Show " + ns.user + "'s view", "aria-pressed": state.selected === ns.user ? "true" : "false" },
                            ns.user);
            show.addEventListener("click", () => selectView(ns.user));
            const lingerButton = actionButton(linger ? "Stop lingering" : "Linger",
                                              (linger ? "Stop lingering: " : "Linger: ") + ns.user, "SetLinger", ns.user,
                                              () => change("Linger of " + ns.user, "SetLinger", [ns.user, !linger], ns.user));
            const removeButton = actionButton("Remove", "Remove " + ns.user + "'s namespace", "RemoveNamespace", ns.user,
                                              () => confirmRemove(ns.user, removeButton), "pf-m-danger");
            body.appendChild(el("tr", { "data-user": ns.user },
                                el("th", { scope: "row", "data-label": "User" }, show),
                                el("td", { "data-label": "UID" }, ns.uid),
                                el("td", { "data-label": "State" }, ns.state),
                                el("td", { "data-label": "Sessions", title: sessions.join(" ") }, sessions.length),
                                el("td", { "data-label": "Linger" }, linger ? "yes" : "no"),
                                el("td", { "data-label": "Mounts" }, prop(ns, "NMounts", "")),
                                el("td", { class: "pf-c-table__action nsm-actions" }, lingerButton, removeButton)));
        }
    }

    function confirmRemove(user, opener) {
        modal({
            title: "Remove " + user + "'s namespace?",
            ok: "Remove",
            danger: true,
            opener,
            body: [el("p", {}, "The view is unpinned and its state removed. Processes still inside keep it until they end.")],
            submit: () => managerCall("RemoveNamespace", [user]).then(() => {
                if (state.selected === user)
                    state.selected = null;
                state.can.clear();
                refresh();
            }),
        });
    }

    /* ---- a view's mount tree ---- */

    /* Mounts a view cannot do without: never offered Unmount, Private or Eject (the daemon's
     * own refusals stay as they are; this is what the page offers). */
    const NEEDED = ["/", "/proc", "/sys", "/dev"];
    /* The host's own file systems: the daemon never ejects their devices. */
    const HOST_KEPT = ["/", "/usr", "/boot", "/boot/efi", "/var", "/home"];

    /* One entry of GetMountsEx (docs/interface.md). */
    function mountEntry(m) {
        return {
            id: m[0], fingerprint: m[1], parent: m[2], peer: m[3], master: m[4],
            point: m[5], pointBytes: m[6], source: m[7], sourceBytes: m[8], fstype: m[9], options: m[10],
            propagation: m[11], device: m[12], origin: m[13],
        };
    }

    /* major << 32 | minor, as GetMountsEx gives it (exact: below 2^53). */
    function deviceText(device) {
        if (!device)
            return null;
        return Math.floor(device / 4294967296) + ":" + (device % 4294967296);
    }

    /* A path the daemon did not escape reads the same as its bytes: the path-taking methods
     * (ShareSubtree, EnslaveSubtree) can name it. */
    function literal(point) {
        return point.indexOf("\\") < 0;
    }

    /* Where a mount came from, as far as the daemon and the kernel tell, never a guess: the
     * daemon's own mounts say so; a group is named by the host's mount at the same mount point
     * (the one the view's is a copy of), never by another member; a group the host lacks was
     * made in this view; anything else is unknown. */
    function origin(m, user) {
        if (user === "")
            return m.peer ? "shared, peer group " + m.peer : m.master ? "receives from peer group " + m.master : "the host's own";
        if (m.origin === "daemon")
            return "bound by nsmanagerd";
        if (m.origin === "policy")
            return "the [View] policy's";
        if (m.origin === "user")
            return "the user's FUSE mount";
        const group = m.peer || m.master;
        if (!group)
            return "unknown (in no peer group)";
        const members = state.hostMounts.filter(h => h.peer === group);
        const copyOf = members.find(h => h.point === m.point);
        const verb = m.peer ? "peer of" : "receives from";
        if (copyOf)
            return verb + " the host's " + copyOf.point + " (group " + group + ")";
        if (members.length === 0)
            return "made in this view (group " + group + ")";
        return "unknown (" + (m.peer ? "in" : "receives from") + " the host's peer group " + group + ")";
    }

    /* The mounts in tree order, each with its depth. */
    function treeOrder(mounts) {
        const ids = new Set(mounts.map(m => m.id));
        const children = new Map();
        const roots = [];
        for (const m of mounts) {
            if (m.parent === m.id || !ids.has(m.parent))
                roots.push(m);
            else {
                if (!children.has(m.parent))
                    children.set(m.parent, []);
                children.get(m.parent).push(m);
            }
        }
        const out = [];
        const walk = (m, depth) => {
            out.push([m, depth]);
            for (const c of children.get(m.id) || [])
                walk(c, depth + 1);
        };
        roots.forEach(r => walk(r, 0));
        return out;
    }

    /* The devices of the host's own file systems (the daemon refuses to eject them). */
    function keptDevices() {
        const kept = new Set();
        for (const path of HOST_KEPT) {
            const found = state.hostMounts.filter(h => h.point === path);
            if (found.length && found[found.length - 1].device)
                kept.add(found[found.length - 1].device);
        }
        return kept;
    }

    function mountCells(m, user) {
        return {
            Source: m.source,
            Type: m.fstype,
            Propagation: m.propagation,
            "Peer group": m.peer ? String(m.peer) : "—",
            Master: m.master ? String(m.master) : "—",
            Device: deviceText(m.device) || "—",
            "Came from": origin(m, user),
        };
    }

    function mountRow(m, depth, user, kept) {
        const point = m.point;
        const needed = NEEDED.includes(point) || m.origin === "policy";
        const pointCell = el("th", { scope: "row", "data-label": "Mount point", class: "nsm-mount-point" },
                             el("span", { class: "nsm-mount-point-text" }, point));
        pointCell.style.paddingLeft = (0.5 + depth * 1.25) + "rem";
        const actions = el("td", { class: "pf-c-table__action nsm-actions" });
        if (literal(point)) {
            actions.appendChild(actionButton("Share", "Share " + point, "ShareSubtree", user,
                                             () => change("Sharing " + point, "ShareSubtree", [user, point], user)));
            actions.appendChild(actionButton("Enslave", "Enslave " + point, "EnslaveSubtree", user,
                                             () => change("Enslaving " + point, "EnslaveSubtree", [user, point], user)));
        }
        if (!needed) {
            const priv = actionButton("Private", "Make " + point + " private", "SetPropagationById", user,
                                      () => confirmAction(m, user, priv, {
                                          title: "Make " + point + " private in " + viewName(user) + "?",
                                          ok: "Make private",
                                          text: "Mounts under it stop propagating to and from its peers.",
                                          what: "Making " + point + " private",
                                          method: "SetPropagationById",
                                          args: [user, m.id, m.pointBytes, "private", 0],
                                      }));
            actions.appendChild(priv);
            const unmount = actionButton("Unmount", "Unmount " + point, "UnmountById", user,
                                         () => confirmAction(m, user, unmount, {
                                             title: "Unmount " + point + " in " + viewName(user) + "?",
                                             ok: "Unmount",
                                             text: "The mount is taken off; a busy one is refused.",
                                             what: "Unmounting " + point,
                                             method: "UnmountById",
                                             args: [user, m.id, m.pointBytes, 0],
                                         }));
            actions.appendChild(unmount);
        }
        /* Eject: only a file system the kernel says is on a block device, named by that device. */
        if (m.device && !needed && !kept.has(m.device)) {
            const what = "/dev/block/" + deviceText(m.device);
            const eject = actionButton("Eject", "Eject " + point + " (device " + deviceText(m.device) + ")", "Eject", "",
                                       () => confirmAction(m, user, eject, {
                                           title: "Eject the device of " + point + "?",
                                           ok: "Eject",
                                           text: "Every mount of device " + deviceText(m.device) +
                                                 ", on the host and in every view, is detached.",
                                           what: "Eject of " + point,
                                           method: "Eject",
                                           args: [what, 0],
                                           canUser: "",
                                           done: ([detached]) => {
                                               const lines = detached.map(([u, p]) => (u === "" ? "host" : u) + ": " + p);
                                               showAlert("success", "Ejected device " + deviceText(m.device),
                                                         lines.length ? "Detached " + lines.join(", ") : "Nothing was mounted.");
                                           },
                                       }));
            actions.appendChild(eject);
        }
        const cells = mountCells(m, user);
        return el("tr", { "data-mount-point": point, "data-mount-id": String(m.id), "aria-level": depth + 1 },
                  pointCell,
                  ...Object.entries(cells).map(([label, text]) => el("td", { "data-label": label }, text)),
                  actions);
    }

    /* Whether the table must hold still: the pointer or the focus is in it, or a dialog is open. */
    function tableHeld() {
        const table = $("mounts");
        return state.pointerInTable || modalState !== null || (table && table.contains(document.activeElement));
    }

    function renderMounts() {
        const user = state.selected;
        const body = $("mounts-body");
        clear(body);
        state.pending = null;
        $("mounts-banner").hidden = true;
        $("view").hidden = user === null;
        $("graph-card").hidden = user === null;
        if (user === null)
            return;
        $("view-title").textContent = user === "" ? "Mounts of the host" : "Mount tree of " + user + "'s view";
        $("bind-button").hidden = user === "";
        const kept = keptDevices();
        for (const [m, depth] of treeOrder(state.mounts))
            body.appendChild(mountRow(m, depth, user, kept));
        renderGraph();
    }

    /* A new table while the old one is held: rows stay where they are; a row's text follows
     * its mount (by id), a vanished one is marked gone and its actions are taken away, new
     * ones wait behind the banner until it is clicked or the pointer and focus leave. */
    function holdMounts(mounts, hostMounts) {
        const user = state.selected;
        const byId = new Map(mounts.map(m => [String(m.id), m]));
        const shown = new Set();
        state.pending = { mounts, hostMounts };
        for (const row of $("mounts-body").querySelectorAll("tr")) {
            const id = row.getAttribute("data-mount-id");
            shown.add(id);
            const m = byId.get(id);
            if (!m) {
                if (!row.classList.contains("nsm-gone")) {
                    row.classList.add("nsm-gone");
                    row.querySelector(".nsm-mount-point").appendChild(el("span", { class: "nsm-gone-label" }, " (gone)"));
                    for (const b of row.querySelectorAll("button")) {
                        b.disabled = true;
                        b.setAttribute("data-can", "gone");
                    }
                }
                continue;
            }
            const cells = mountCells(m, user);
            for (const td of row.querySelectorAll("td[data-label]"))
                if (cells[td.getAttribute("data-label")] !== undefined)
                    td.textContent = cells[td.getAttribute("data-label")];
        }
        const added = mounts.filter(m => !shown.has(String(m.id))).length;
        const gone = [...shown].filter(id => !byId.has(id)).length;
        const changes = added + gone;
        $("mounts-banner").hidden = changes === 0;
        $("mounts-banner-text").textContent = changes === 1 ? "1 change" : changes + " changes";
    }

    function applyPending() {
        if (!state.pending)
            return;
        state.mounts = state.pending.mounts;
        state.hostMounts = state.pending.hostMounts;
        renderMounts();
    }

    /* Unmount, Private, Eject: a confirmation that names the very mount (path, source, id,
     * device), then the call by its id. MountChanged (the mount went or moved meanwhile) and
     * every other refusal show the daemon's message; the table is read again either way. */
    function confirmAction(m, user, opener, a) {
        const canUser = a.canUser !== undefined ? a.canUser : user;
        const facts = [
            ["View", viewName(user)],
            ["Mount point", m.point],
            ["Source", m.source],
            ["Type", m.fstype],
            ["Mount id", String(m.id)],
            ["Device", deviceText(m.device) || "none"],
        ];
        const list = el("dl", { class: "nsm-facts" });
        for (const [k, v] of facts)
            list.appendChild(el("div", {}, el("dt", {}, k), el("dd", { "data-fact": k }, v)));
        modal({
            title: a.title,
            ok: a.ok,
            danger: true,
            opener,
            body: [el("p", {}, a.text), list],
            submit: () => can(a.method, canUser).then(answer =>
                managerCall(a.method, a.args, answer === "challenge" ? { flags: "i" } : undefined)).then(result => {
                state.can.clear();
                if (a.done)
                    a.done(result);
            }, err => {
                showError(a.what + " failed", err);
            }).finally(() => refreshMounts(true).then(refreshNamespaces)),
        });
    }

    /* ---- the peer-group graph, drawn here as SVG ---- */

    function renderGraph() {
        const box = $("graph");
        clear(box);
        const user = state.selected;
        const sets = user === "" ? [["host", state.mounts]] : [["host", state.hostMounts], [user, state.mounts]];
        const groups = new Map();    /* group -> y */
        const nodes = [];            /* { column, label, peer, master } */
        for (const [column, mounts] of sets)
            for (const m of mounts)
                if (m.peer || m.master)
                    nodes.push({ column, label: m.point, peer: m.peer, master: m.master });
        for (const n of nodes)
            for (const g of [n.peer, n.master])
                if (g && !groups.has(g))
                    groups.set(g, 0);
        if (nodes.length === 0) {
            box.appendChild(el("p", {}, "No mount here is in a peer group or receives from one."));
            return;
        }
        const rowH = 26;
        const colX = { host: 10, group: 330, view: 480 };
        const perColumn = new Map();
        for (const n of nodes) {
            const i = perColumn.get(n.column) || 0;
            n.y = 30 + i * rowH;
            perColumn.set(n.column, i + 1);
        }
        /* Each group level with the middle of its mounts, never closer than a row to the one above. */
        const middle = new Map();
        for (const n of nodes)
            for (const g of [n.peer, n.master])
                if (g) {
                    const [sum, count] = middle.get(g) || [0, 0];
                    middle.set(g, [sum + n.y - 4, count + 1]);
                }
        const sortedGroups = [...groups.keys()].sort((a, b) => {
            const ma = middle.get(a)[0] / middle.get(a)[1];
            const mb = middle.get(b)[0] / middle.get(b)[1];
            return ma - mb || a - b;
        });
        let previous = 0;
        for (const g of sortedGroups) {
            const [sum, count] = middle.get(g);
            previous = Math.max(sum / count, previous + rowH);
            groups.set(g, previous);
        }
        const height = Math.max(...[...perColumn.values()].map(c => 30 + c * rowH), previous + 20) + 10;
        const s = svg("svg", { width: 820, height, viewBox: "0 0 820 " + height, role: "img",
                               "aria-labelledby": "graph-title graph-desc", class: "nsm-graph" });
        s.appendChild(svg("desc", { id: "graph-desc" },
                          "Peer groups of " + (user === "" ? "the host" : "the host and " + user + "'s view")));
        const defs = svg("defs");
        const marker = svg("marker", { id: "nsm-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
                                       markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
        marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "nsm-graph-arrow" }));
        defs.appendChild(marker);
        s.appendChild(defs);
        s.appendChild(svg("text", { x: colX.host, y: 14, class: "nsm-graph-heading" }, "host"));
        if (user !== "")
            s.appendChild(svg("text", { x: colX.view, y: 14, class: "nsm-graph-heading" }, user));
        const xOf = n => n.column === "host" ? colX.host : colX.view;
        const edgeX = n => n.column === "host" ? colX.host + 230 : colX.view - 6;
        for (const n of nodes) {
            if (n.peer)
                s.appendChild(svg("line", { x1: edgeX(n), y1: n.y - 4, x2: colX.group, y2: groups.get(n.peer),
                                            class: "nsm-graph-peer" }));
            if (n.master)
                s.appendChild(svg("line", { x1: colX.group, y1: groups.get(n.master), x2: edgeX(n), y2: n.y - 4,
                                            class: "nsm-graph-slave", "marker-end": "url(#nsm-arrow)" }));
        }
        for (const [g, y] of groups) {
            s.appendChild(svg("circle", { cx: colX.group, cy: y, r: 11, class: "nsm-graph-group" }));
            s.appendChild(svg("text", { x: colX.group, y: y + 4, "text-anchor": "middle", class: "nsm-graph-group-label" },
                              String(g)));
        }
        for (const n of nodes) {
            const t = svg("text", { x: xOf(n) + (n.column === "host" ? 0 : 0), y: n.y, class: "nsm-graph-mount" });
            t.textContent = n.label.length > 34 ? n.label.slice(0, 33) + "…" : n.label;
            const title = svg("title", {}, n.label);
            t.appendChild(title);
            s.appendChild(t);
        }
        box.appendChild(s);
    }

    /* ---- the bind dialog ---- */

    function bindDialog() {
        const user = state.selected;
        const source = el("input", { id: "bind-source", class: "pf-c-form-control", type: "text", required: true,
                                     autocomplete: "off", spellcheck: "false" });
        const dest = el("input", { id: "bind-destination", class: "pf-c-form-control", type: "text", required: true,
                                   autocomplete: "off", spellcheck: "false" });
        const ro = el("input", { id: "bind-read-only", class: "pf-c-check__input", type: "checkbox" });
        const mkdir = el("input", { id: "bind-mkdir", class: "pf-c-check__input", type: "checkbox" });
        modal({
            title: "Bind into " + viewName(user),
            ok: "Bind",
            opener: $("bind-button"),
            body: [
                el("div", { class: "pf-c-form__group" },
                   el("label", { class: "pf-c-form__label", for: "bind-source" }, "Source"),
                   source,
                   el("p", { class: "pf-c-form__helper-text" },
                      "A path of the host (for an administrator) or, in your own view, a file or directory of yours.")),
                el("div", { class: "pf-c-form__group" },
                   el("label", { class: "pf-c-form__label", for: "bind-destination" }, "Destination in the view"), dest),
                el("div", { class: "pf-c-check" }, ro, el("label", { class: "pf-c-check__label", for: "bind-read-only" }, "Read-only")),
                el("div", { class: "pf-c-check" }, mkdir,
                   el("label", { class: "pf-c-check__label", for: "bind-mkdir" }, "Create the destination if it is missing")),
            ],
            /* As nsctl bind USER SOURCE DEST: both given; what they may be is the daemon's to say. */
            validate: () => {
                if (source.value === "")
                    return [source, "Give a source."];
                if (dest.value === "")
                    return [dest, "Give a destination."];
                return null;
            },
            submit: () => can("BindMount", user).then(answer =>
                managerCall("BindMount", [user, source.value, dest.value, (ro.checked ? 1 : 0) | (mkdir.checked ? 2 : 0)],
                            answer === "challenge" ? { flags: "i" } : undefined)).then(() => {
                state.can.clear();
                /* The caller's own change: shown at once, before the dialog gives the table back. */
                return refreshMounts(true).then(refreshNamespaces);
            }),
        });
    }

    /* ---- a modal dialog: labelled, focus kept inside, Escape cancels, focus back to its opener ---- */

    let modalState = null;

    function modal(opts) {
        const body = $("modal-body");
        clear(body);
        opts.body.forEach(b => body.appendChild(b));
        $("modal-title").textContent = opts.title;
        $("modal-ok").textContent = opts.ok;
        $("modal-ok").className = "pf-c-button " + (opts.danger ? "pf-m-danger" : "pf-m-primary");
        $("modal-ok").disabled = false;
        $("modal-error").hidden = true;
        clear($("modal-error"));
        $("modal-backdrop").hidden = false;
        $("main").setAttribute("aria-hidden", "true");
        modalState = opts;
        const first = body.querySelector("input") || $("modal-ok");
        first.focus();
    }

    function closeModal() {
        const opener = modalState && modalState.opener;
        modalState = null;
        $("modal-backdrop").hidden = true;
        $("main").removeAttribute("aria-hidden");
        if (opener && document.body.contains(opener) && !opener.disabled)
            opener.focus();
        else
            $("main").focus();
        if (!tableHeld())
            applyPending();
    }

    function modalError(title, text) {
        const box = $("modal-error");
        clear(box);
        box.appendChild(el("p", { class: "pf-c-alert__title" }, title));
        if (text)
            box.appendChild(el("div", { class: "pf-c-alert__description" }, text));
        box.hidden = false;
    }

    function setupModal() {
        $("modal-form").addEventListener("submit", ev => {
            ev.preventDefault();
            if (!modalState)
                return;
            const invalid = modalState.validate ? modalState.validate() : null;
            if (invalid) {
                modalError(invalid[1]);
                invalid[0].focus();
                return;
            }
            $("modal-ok").disabled = true;
            modalState.submit().then(closeModal, err => {
                $("modal-ok").disabled = false;
                modalError(errorMessage(err), errorName(err));
            });
        });
        $("modal-cancel").addEventListener("click", closeModal);
        $("modal-backdrop").addEventListener("keydown", ev => {
            if (ev.key === "Escape") {
                ev.preventDefault();
                closeModal();
            } else if (ev.key === "Tab") {
                const focusable = [...$("modal").querySelectorAll("input, button:not([disabled])")];
                const first = focusable[0];
                const last = focusable[focusable.length - 1];
                if (ev.shiftKey && document.activeElement === first) {
                    ev.preventDefault();
                    last.focus();
                } else if (!ev.shiftKey && document.activeElement === last) {
                    ev.preventDefault();
                    first.focus();
                }
            }
        });
    }

    /* ---- loading and live updates ---- */

    /* The view shown, subscribed to alone: its MountsChanged refresh the table. The list of
     * views needs only each view's number of mounts: MountCountsChanged (SubscribeMountCounts)
     * gives them, which spares the daemon reading every view's table in detail on each host
     * mount (ViewsMountsChanged would). */
    let shown = null;            /* { path, signal } */
    let mountsChanged = () => {};

    function watchShown() {
        const ns = state.namespaces.find(n => n.user === state.selected);
        const path = ns ? ns.path : null;
        if (shown && shown.path === path)
            return;
        if (shown) {
            shown.signal.remove();
            call(shown.path, NAMESPACE_IFACE, "Unsubscribe", []).catch(() => {});
            shown = null;
        }
        if (!path)
            return;
        shown = { path, signal: client.subscribe({ interface: NAMESPACE_IFACE, member: "MountsChanged", path }, () => mountsChanged()) };
        call(path, NAMESPACE_IFACE, "Subscribe", []).catch(() => {});
    }

    function selectView(user) {
        state.selected = user;
        watchShown();
        refreshProcesses();
        refreshMounts(true).then(() => {
            const title = $("view-title");
            title.setAttribute("tabindex", "-1");
            title.focus();
        });
        renderNamespaces();
    }

    /* force: show what is, held or not (a view just chosen, an action just done). */
    function refreshMounts(force) {
        const user = state.selected;
        if (user === null) {
            renderMounts();
            return Promise.resolve();
        }
        const host = managerCall("GetMountsEx", [""]).then(r => r[0].map(mountEntry));
        const view = user === "" ? host : managerCall("GetMountsEx", [user]).then(r => r[0].map(mountEntry));
        return Promise.all([host, view]).then(([h, v]) => {
            if (state.selected !== user)
                return;
            if (!force && tableHeld() && $("mounts-body").firstChild) {
                holdMounts(v, h);
                return;
            }
            state.hostMounts = h;
            state.mounts = v;
            renderMounts();
        }, err => {
            if (state.selected !== user)
                return;
            if (errorName(err) === "org.example.NSManager.Error.NoSuchNamespace") {
                state.selected = null;
                renderMounts();
                return;
            }
            showError("Cannot read the mounts of " + viewName(user), err);
        });
    }

    /* Who runs what in the shown view (ListProcesses): root, the view's user and holders of
     * manage may see it; for anybody else the card stays hidden. Command names are the
     * daemon's escaped text, shown as text. */
    function refreshProcesses() {
        const user = state.selected;
        const card = $("processes-card");
        if (user === null || user === "") {
            card.hidden = true;
            return Promise.resolve();
        }
        /* Only where Can() says yes: never a password prompt for a list. */
        return can("ListProcesses", user).then(answer => answer === "yes" ? managerCall("ListProcesses", [user]) : null).then(reply => {
            if (state.selected !== user)
                return;
            if (reply === null) {
                card.hidden = true;
                return;
            }
            const list = reply[0];
            const names = new Map(state.namespaces.map(ns => [ns.uid, ns.user]));
            const body = $("processes-body");
            clear(body);
            for (const [pid, uid, comm, session] of list)
                body.appendChild(el("tr", { "data-pid": pid },
                                    el("td", { "data-label": "PID" }, pid),
                                    el("td", { "data-label": "User" }, names.get(uid) || String(uid)),
                                    el("td", { "data-label": "Command" }, comm),
                                    el("td", { "data-label": "Session" }, session || "-")));
            $("processes-empty").hidden = list.length > 0;
            card.hidden = false;
        }, err => {
            if (state.selected !== user)
                return;
            card.hidden = true;
            const name = errorName(err);
            if (name !== "org.freedesktop.DBus.Error.AccessDenied" &&
                name !== "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired" &&
                name !== "org.example.NSManager.Error.NoSuchNamespace")
                showError("Cannot list the processes of " + viewName(user), err);
        });
    }

    function refreshNamespaces() {
        return loadNamespaces().then(list => {
            /* A MountCountsChanged heard while the list was read is newer than its GetAll. */
            for (const ns of list)
                if (state.counts.has(ns.path))
                    ns.props.NMounts = { t: "u", v: state.counts.get(ns.path) };
            state.namespaces = list;
            if (state.selected && !list.some(ns => ns.user === state.selected)) {
                state.selected = null;
                renderMounts();
            }
            watchShown();
            renderNamespaces();
        }, err => showError("Cannot list the namespaces", err));
    }

    function refresh() {
        return Promise.all([refreshNamespaces(), refreshMounts(), refreshProcesses()]);
    }

    /* Signals come in bursts (an automount storm, a view being built): one refresh for each. */
    function debounce(fn, ms) {
        let timer = null;
        return () => {
            if (timer === null)
                timer = window.setTimeout(() => {
                    timer = null;
                    fn();
                }, ms);
        };
    }

    function setupLive() {
        const namespacesChanged = debounce(refreshNamespaces, 100);
        const listChanged = debounce(renderNamespaces, 100);
        mountsChanged = debounce(() => refreshMounts(), 100);
        /* The views whose number of mounts changed, with the number now (absolute: the latest
         * wins); nothing is read. The list is drawn again only for a number it does not show
         * yet (a row drawn again is a row taken from under the pointer). */
        const mountCountsChanged = (path, iface, signal, [counts]) => {
            let changed = false;
            /* (A host mount names every view: looked up by path, not searched for each.) */
            const byPath = new Map(state.namespaces.map(n => [n.path, n]));
            for (const [view, count] of counts) {
                state.counts.set(view, count);
                const ns = byPath.get(view);
                if (ns && prop(ns, "NMounts", null) !== count) {
                    ns.props.NMounts = { t: "u", v: count };
                    changed = true;
                }
            }
            if (changed)
                listChanged();
        };
        client.subscribe({ interface: MANAGER_IFACE, path: MANAGER_PATH, member: "NamespaceNew" }, namespacesChanged);
        client.subscribe({ interface: MANAGER_IFACE, path: MANAGER_PATH, member: "NamespaceRemoved" },
                         (path, iface, signal, [, view]) => {
                             state.counts.delete(view);
                             namespacesChanged();
                         });
        client.subscribe({ interface: PROPERTIES_IFACE, member: "PropertiesChanged", path_namespace: MANAGER_PATH },
                         namespacesChanged);
        /* The host's table gives every view's mounts their origins: a change there is shown. */
        client.subscribe({ interface: MANAGER_IFACE, path: MANAGER_PATH, member: "HostMountsChanged" }, () => {
            if (state.selected !== null)
                mountsChanged();
        });
        client.subscribe({ interface: MANAGER_IFACE, path: MANAGER_PATH, member: "MountCountsChanged" },
                         mountCountsChanged);

        /* Mount signals are sent only while somebody is subscribed; the daemon drops the
         * subscriptions when this page's connection goes. Settles once answered, either way:
         * the counts read after it are current (one that changed before comes in no signal). */
        const subscribed = managerCall("SubscribeMountCounts", []);
        subscribed.then(() =>
            call(MANAGER_PATH, PROPERTIES_IFACE, "Get", [MANAGER_IFACE, "MountEvents"]).then(([v]) => v.v, () => "")
        ).then(how => {
            $("live-status").textContent = "Live mount updates" + (how ? " (" + how + ")" : "") + ".";
        }, err => {
            $("live-status").textContent = "Live mount updates are not available: " + errorMessage(err);
        });
        return subscribed.catch(() => {});
    }

    function loadHostSummary() {
        call(MANAGER_PATH, PROPERTIES_IFACE, "GetAll", [MANAGER_IFACE]).then(([props]) => {
            const get = (k, d) => props[k] ? props[k].v : d;
            $("host-summary").textContent = "nsmanagerd " + get("Version", "?") + "; views are assembled in " +
                get("SubtreeRoot", "?") + "; shared subtrees: " + (get("SharedSubtrees", []).join(" ") || "none") + ".";
        }, err => showError("Cannot reach nsmanagerd", err));
    }

    /* The pointer and the focus hold the table still; when both have left, what came meanwhile
     * is shown. */
    function setupHold() {
        const table = $("mounts");
        const release = () => {
            if (!tableHeld())
                applyPending();
        };
        table.addEventListener("mouseenter", () => {
            state.pointerInTable = true;
        });
        table.addEventListener("mouseleave", () => {
            state.pointerInTable = false;
            release();
        });
        table.addEventListener("focusout", () => window.setTimeout(release, 0));
        $("mounts-banner-button").addEventListener("click", applyPending);
    }

    function init() {
        client = cockpit.dbus(BUS_NAME, { bus: "system", superuser: "try" });
        setupModal();
        setupHold();
        $("bind-button").addEventListener("click", bindDialog);
        $("host-button").addEventListener("click", () => selectView(""));
        loadHostSummary();
        /* The list is read once the counts are subscribed to: NMounts is current from then on. */
        setupLive().then(refresh).then(() => document.body.setAttribute("data-loaded", "true"));
    }

    document.addEventListener("DOMContentLoaded", init);
}());
