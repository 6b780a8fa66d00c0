# SPDX-License-Identifier: LGPL-2.1-or-later
"""The project's reference of its public interface cannot drift from the daemon.

dbus/org.example.NSManager.Manager.xml and ...Namespace.xml are the introspection of the
running daemon, checked in as systemd ships its interfaces' XML (and installed into
/usr/share/dbus-1/interfaces/). docs/interface.md names every method, signal, property,
error and configuration key; nsmanagerd.conf(5) every key.

After a deliberate change to the interface, regenerate the XML from the daemon with
    NSM_UPDATE_INTERFACE_XML=1 /usr/bin/python3 -m pytest tests/test_interface.py
and review the diff.
"""

import copy
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers import create
from sandbox import MANAGER_IFACE, MANAGER_PATH, NAMESPACE_IFACE
from test_core import busctl_interface

SOURCE = Path(__file__).resolve().parent.parent
XML_HEADER = """<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
<!-- SPDX-License-Identifier: LGPL-2.1-or-later -->
<!-- The introspection of nsmanagerd, as "busctl introspect" shows it with its XML option
     (tests/test_interface.py keeps the two equal). docs/interface.md describes it. -->
"""


def canonical(element):
    """An element as a comparable tree: tag, attributes and children, without whitespace."""
    return (element.tag, sorted(element.attrib.items()), [canonical(c) for c in element])


def render(iface):
    iface = copy.deepcopy(iface)
    for e in iface.iter():
        e.text = e.tail = None
    ET.indent(iface, space=" ", level=1)
    body = ET.tostring(iface, encoding="unicode")
    return XML_HEADER + "<node>\n " + body.rstrip() + "\n</node>\n"


def checked_in(name):
    return SOURCE / "dbus" / f"{name}.xml"


def test_introspection_matches_the_checked_in_xml(daemon):
    (ns_object,) = create(daemon, "alice")
    for path, interface in ((MANAGER_PATH, MANAGER_IFACE), (ns_object, NAMESPACE_IFACE)):
        live = busctl_interface(daemon, path, interface)
        file = checked_in(interface)
        if os.environ.get("NSM_UPDATE_INTERFACE_XML"):
            file.write_text(render(live))
        assert file.exists(), f"{file} is missing: NSM_UPDATE_INTERFACE_XML=1 writes it"
        [kept] = [i for i in ET.parse(file).getroot().iter("interface") if i.get("name") == interface]
        assert canonical(kept) == canonical(live), \
            f"{file.name} differs from what the daemon introspects; after a deliberate change, " \
            f"regenerate it (NSM_UPDATE_INTERFACE_XML=1) and update docs/interface.md:\n{render(live)}"


def members(interface):
    root = ET.parse(checked_in(interface)).getroot()
    return [(m.tag, m.get("name")) for i in root.iter("interface") for m in i
            if m.tag in ("method", "signal", "property")]


def test_interface_md_describes_every_member():
    doc = (SOURCE / "docs/interface.md").read_text()
    for interface in (MANAGER_IFACE, NAMESPACE_IFACE):
        assert members(interface), f"no members found in {checked_in(interface).name}: nothing would be checked"
    missing = [f"{interface} {kind} {name}" for interface in (MANAGER_IFACE, NAMESPACE_IFACE)
               for kind, name in members(interface) if not re.search(rf"`{name}[`(]", doc)]
    assert not missing, f"docs/interface.md does not describe: {missing}"


def test_interface_md_names_every_error_and_key():
    doc = (SOURCE / "docs/interface.md").read_text()
    # The table of the project's errors: its own names and the standard ones it uses.
    table = (SOURCE / "src/shared/nsm-error.c").read_text()
    errors = [("org.example.NSManager.Error." if prefix == "NSM" else "org.freedesktop.DBus.Error.") + name
              for prefix, name in re.findall(r'(NSM|DBUS)_ERROR_PREFIX "(\w+)"', table)]
    assert len(errors) > 9, "no error names found in nsm-error.c"
    keys = re.findall(r'\{ "(?:Manager|View)",\s*"(\w+)"', (SOURCE / "src/config/manager-config.c").read_text())
    assert len(keys) > 10, "no configuration keys found in manager-config.c"
    man = (SOURCE / "man/nsmanagerd.conf.5").read_text()
    assert not [e for e in errors if f"`{e}`" not in doc], "docs/interface.md lacks an error"
    assert not [k for k in keys if f"`{k}=`" not in doc], "docs/interface.md lacks a key"
    assert not [k for k in keys if not re.search(rf"^\.B[IR]? {k}=", man, re.M)], "nsmanagerd.conf(5) lacks a key"


def test_the_bus_policy_raises_no_limit():
    """The daemon lives within the bus's stock limits (docs/security.md, "Shared budgets"):
    the shipped policy raises none of them."""
    for conf in (SOURCE / "dbus").glob("*.conf"):
        assert "<limit" not in conf.read_text(), f"{conf.name} raises a <limit>"
