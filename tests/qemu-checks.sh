#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The checks of the kernel matrix, run as root inside Debian 12 booted under qemu with one of
# Debian's kernels (tests/qemu.py, tests/test_qemu.py). The payload disk is /nsmtest: the
# package is /nsmtest/nsmanager.deb. Each check prints
#       CHECK NAME ok
#       CHECK NAME FAIL: what went wrong
#       CHECK NAME skip: why
# with what it did in between (indented); test_qemu.py turns each into a test. Checks run in
# order and later ones rely on the install; each waits by polling, never for a fixed time.
set -u
export LANG=C.UTF-8 SYSTEMD_PAGER= SYSTEMD_COLORS=0 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

ALICE=alice ALICE_UID=2001 BOB=bob BOB_UID=2002
UNIT=nsmanagerd.service
BUS=org.example.NSManager
KERNEL=$(uname -r)
KMAJOR=${KERNEL%%.*} KMINOR=${KERNEL#*.}; KMINOR=${KMINOR%%.*}
kernel_at_least() { (( KMAJOR > $1 || (KMAJOR == $1 && KMINOR >= $2) )); }

log() { printf '  %s\n' "$*" >&2; }
fail() { printf '%s\n' "$*" >"$FAILMSG"; return 1; }
# check NAME FUNCTION: runs it, prints its verdict. A function that prints "skip: …" to fd 3
# and returns 0 is skipped.
check() {
        local name=$1 rc reason out
        shift
        FAILMSG=$(mktemp)
        SKIPMSG=$(mktemp)
        out=$(mktemp)
        echo "---- $name"
        # Not in a pipeline: a check runs in this shell (what it starts, it can wait for).
        "$@" 3>"$SKIPMSG" >"$out" 2>&1
        rc=$?
        sed 's/^/  /' "$out"
        rm -f "$out"
        if [[ $rc -ne 0 ]]; then
                reason=$(tr '\n' ' ' <"$FAILMSG")
                echo "CHECK $name FAIL: ${reason:-exit status $rc}"
        elif [[ -s "$SKIPMSG" ]]; then
                echo "CHECK $name $(tr '\n' ' ' <"$SKIPMSG")"
        else
                echo "CHECK $name ok"
        fi
        rm -f "$FAILMSG" "$SKIPMSG"
}
# poll SECONDS COMMAND...: until the command succeeds (every 0.2 s), or fail.
poll() {
        local end=$((SECONDS + $1))
        shift
        until "$@" >/dev/null 2>&1; do
                (( SECONDS < end )) || return 1
                sleep 0.2
        done
}
run() {
        log "\$ $*"
        "$@"
}
as_alice() { su -l "$ALICE" -c "$1"; }
ns_id() {
        busctl get-property "$BUS" "/org/example/NSManager/user/_$1" "$BUS.Namespace" MountNamespaceId 2>/dev/null |
                awk '{print "mnt:[" $2 "]"}'
}
main_pid() { systemctl show -p MainPID --value "$UNIT"; }
state_file() { cat "/run/nsmanager/namespaces/$ALICE"; }
# The mountinfo id of the top mount at PATH in alice's view.
view_mount_id() {
        nsctl attach "$ALICE" -- awk -v p="$1" '$5 == p { id = $1 } END { print id }' /proc/self/mountinfo
}
view_mounts_at() {
        nsctl attach "$ALICE" -- awk -v p="$1" '$5 == p' /proc/self/mountinfo
}

# ---- the checks ------------------------------------------------------------------------

check_kernel() {
        log "kernel $KERNEL"
        log "unique mount ids (6.8): $(kernel_at_least 6 8 && echo yes || echo no); MOVE_MOUNT_BENEATH (6.5): $(kernel_at_least 6 5 && echo yes || echo no)"
        [[ -n "$KERNEL" ]]
}

check_install() {
        # Without KVM the guest runs some 20 times slower than the host, more when the host is
        # busy: the 5 s default deadline of a queued operation then measures the emulator. The
        # deadline's own checks are in the sandbox suite; here it only must not get in the way.
        mkdir -p /etc/nsmanager/nsmanagerd.conf.d
        printf '[Manager]\nOperationTimeoutSec=60\n' >/etc/nsmanager/nsmanagerd.conf.d/50-nsmtest-tcg.conf
        run env DEBIAN_FRONTEND=noninteractive dpkg -i /nsmtest/nsmanager.deb || { fail "dpkg -i nsmanager.deb failed"; return 1; }
        for u in "$ALICE:$ALICE_UID" "$BOB:$BOB_UID"; do
                run useradd --create-home --uid "${u#*:}" --user-group --shell /bin/bash "${u%%:*}" ||
                        { fail "useradd ${u%%:*} failed"; return 1; }
        done
        run env DEBIAN_FRONTEND=noninteractive pam-auth-update --enable nsmanager ||
                { fail "pam-auth-update --enable nsmanager failed"; return 1; }
        # alice may change her own view without a password, as on a desktop (her su sessions
        # are not active local ones): the own-view rules decide the rest.
        cat >/etc/polkit-1/rules.d/50-nsmtest.rules <<'EOF'
polkit.addRule(function(action, subject) {
        if (action.id == "org.example.NSManager.manage-own" && subject.user == "alice")
                return polkit.Result.YES;
});
EOF
        # A [View] policy mount for alice, for the reused-id check.
        mkdir -p /opt/nsm-policy /etc/nsmanager/user.d
        printf '[View]\nTemporaryFileSystem=/opt/nsm-policy:mode=0755\n' >/etc/nsmanager/user.d/alice.conf
        mkdir -p /srv/one /srv/two /srv/three/sub
        echo one >/srv/one/marker
        echo two >/srv/two/marker
        echo three >/srv/three/marker
}

check_unit_active() {
        run busctl call "$BUS" /org/example/NSManager "$BUS.Manager" ListNamespaces >/dev/null ||
                { fail "ListNamespaces failed (D-Bus activation?)"; return 1; }
        poll 30 systemctl is-active --quiet "$UNIT" || { fail "$UNIT is $(systemctl is-active $UNIT)"; return 1; }
        log "$UNIT active, pid $(main_pid)"
}

LOGIN_PID=
check_su_login() {
        # A login kept for the whole run: the namespace lives while it does.
        su -l "$ALICE" -c 'exec sleep 100000' </dev/null >/dev/null 2>&1 &
        LOGIN_PID=$!
        has_namespace() { [[ -n "$(ns_id $ALICE_UID)" ]]; }
        poll 60 has_namespace || { fail "no namespace for alice after su -l"; return 1; }
        local want got
        want=$(ns_id $ALICE_UID)
        got=$(as_alice 'readlink /proc/self/ns/mnt')
        log "alice's namespace $want, su -l lands in $got, PID 1 is in $(readlink /proc/1/ns/mnt)"
        [[ "$got" == "$want" && "$got" != "$(readlink /proc/1/ns/mnt)" ]] || fail "su -l alice is in $got, her namespace is $want"
}

check_sudo() {
        local got
        got=$(run sudo -u "$ALICE" readlink /proc/self/ns/mnt)
        [[ "$got" == "$(ns_id $ALICE_UID)" ]] || fail "sudo -u alice is in $got"
}

check_ssh() {
        su "$ALICE" -c 'mkdir -p ~/.ssh && ssh-keygen -q -t ed25519 -N "" -f ~/.ssh/id_ed25519 &&
                        cp ~/.ssh/id_ed25519.pub ~/.ssh/authorized_keys' || { fail "ssh-keygen failed"; return 1; }
        poll 60 systemctl is-active --quiet ssh.service || { fail "ssh.service is not active"; return 1; }
        local got
        got=$(su "$ALICE" -c 'ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
                -i ~/.ssh/id_ed25519 alice@127.0.0.1 readlink /proc/self/ns/mnt' 2>/dev/null)
        log "ssh alice@127.0.0.1 readlink /proc/self/ns/mnt: $got"
        [[ "$got" == "$(ns_id $ALICE_UID)" ]] || fail "an ssh command of alice's is in '$got'"
}

check_cron_scheduled() {
        rm -f /tmp/nsmtest-cron
        echo "* * * * * $ALICE readlink /proc/self/ns/mnt > /tmp/nsmtest-cron" >/etc/cron.d/nsmtest
        poll 30 systemctl is-active --quiet cron.service || fail "cron.service is not active"
}

check_cron() {
        # Scheduled at the start: the minute has usually passed by now.
        poll 130 test -s /tmp/nsmtest-cron || { fail "alice's cron job did not run within 130 s"; return 1; }
        local got
        got=$(cat /tmp/nsmtest-cron)
        log "cron job: $got"
        rm -f /etc/cron.d/nsmtest
        [[ "$got" == "$(ns_id $ALICE_UID)" ]] || fail "alice's cron job ran in $got"
}

check_user_manager() {
        local unit=user@$ALICE_UID.service pid
        poll 60 systemctl is-active --quiet "$unit" || { fail "$unit is not active"; return 1; }
        pid=$(systemctl show -p MainPID --value "$unit")
        log "$unit pid $pid in $(readlink /proc/$pid/ns/mnt)"
        [[ "$(readlink /proc/$pid/ns/mnt)" == "$(ns_id $ALICE_UID)" ]] || fail "systemd --user of alice is not in her view"
}

check_host_mount_reaches_view() {
        mkdir -p /mnt/nsm-probe
        run mount -t tmpfs -o size=1m nsm-probe /mnt/nsm-probe || { fail "mount on /mnt failed"; return 1; }
        echo from-the-host >/mnt/nsm-probe/hello
        local seen
        seen=$(as_alice 'cat /mnt/nsm-probe/hello')
        run umount /mnt/nsm-probe
        [[ "$seen" == from-the-host ]] || { fail "alice's view does not show the host's tmpfs on /mnt: '$seen'"; return 1; }
        seen=$(as_alice 'findmnt -n /mnt/nsm-probe || echo none')
        [[ "$seen" == none ]] || fail "the host's unmount did not reach alice's view: $seen"
}

check_attach_as_user() {
        local out ns loginuid cgroup
        out=$(as_alice "nsctl attach $ALICE -- sh -c 'readlink /proc/self/ns/mnt; cat /proc/self/loginuid; echo; grep ^0:: /proc/self/cgroup'")
        log "$out"
        read -r ns loginuid cgroup <<<"$(echo $out)"
        [[ "$ns" == "$(ns_id $ALICE_UID)" ]] || { fail "the attached command is in $ns"; return 1; }
        [[ "$loginuid" == "$ALICE_UID" ]] || { fail "loginuid $loginuid"; return 1; }
        [[ "$cgroup" == *"/user-$ALICE_UID.slice/"* ]] || fail "the attached command is in cgroup $cgroup"
}

check_nsctl_verbs() {
        run nsctl list | grep -q "$ALICE" || { fail "nsctl list does not show alice"; return 1; }
        run nsctl status "$ALICE" | grep -q "$ALICE" || { fail "nsctl status alice"; return 1; }
        run nsctl mounts "$ALICE" >/dev/null || { fail "nsctl mounts alice failed"; return 1; }
        run nsctl mounts >/dev/null || { fail "nsctl mounts (host) failed"; return 1; }
        local n
        n=$(busctl get-property "$BUS" "/org/example/NSManager/user/_$ALICE_UID" "$BUS.Namespace" NMounts | awk '{print $2}')
        log "NMounts $n"
        [[ "$n" -gt 5 ]] || { fail "NMounts of alice's view is $n"; return 1; }
        run nsctl bind "$ALICE" /srv/one /home/alice/nsm-verb --mkdir || { fail "nsctl bind failed"; return 1; }
        [[ "$(as_alice 'cat /home/alice/nsm-verb/marker')" == one ]] || { fail "the bind does not show in the view"; return 1; }
        run nsctl unmount "$ALICE" /home/alice/nsm-verb || { fail "nsctl unmount failed"; return 1; }
        [[ "$(as_alice 'findmnt -n /home/alice/nsm-verb || echo none')" == none ]] || { fail "still mounted"; return 1; }
        mkdir -p /media/nsm-share
        run nsctl share /media/nsm-share || { fail "nsctl share (host) failed"; return 1; }
        run mount -t tmpfs nsm-share /media/nsm-share/x 2>/dev/null || { mkdir -p /media/nsm-share/x; mount -t tmpfs nsm-share /media/nsm-share/x; }
        local seen
        seen=$(as_alice 'findmnt -n -o SOURCE /media/nsm-share/x || echo none')
        umount /media/nsm-share/x
        [[ "$seen" == nsm-share ]] || { fail "a mount under a path shared at run time does not reach the view: $seen"; return 1; }
        [[ "$(nsctl attach "$ALICE" -- readlink /proc/self/ns/mnt)" == "$(ns_id $ALICE_UID)" ]] ||
                fail "root's nsctl attach is not in alice's view"
}

# A reader in the view that looks at DIR/marker as fast as it can until told to stop, and
# counts its looks and the times there was none.
start_reader() {
        rm -f /run/nsmtest-stop /run/nsmtest-reader
        nsctl attach "$ALICE" -- sh -c "n=0; e=0; while [ ! -e /run/nsmtest-stop ]; do n=\$((n+1));
                [ -e '$1/marker' ] || e=\$((e+1)); done; echo \$n \$e > /run/nsmtest-reader" &
        READER=$!
}
stop_reader() {
        touch /run/nsmtest-stop
        wait "$READER"
        read -r LOOKS EMPTY </run/nsmtest-reader
        log "reader: $LOOKS looks, $EMPTY without the marker"
}

check_replace_bind() {
        local dest=/home/alice/nsm-replace i src
        run nsctl bind "$ALICE" /srv/one "$dest" --mkdir || { fail "the first bind failed"; return 1; }
        start_reader "$dest"
        for i in 1 2 3 4 5 6; do
                src=/srv/two
                (( i % 2 == 0 )) && src=/srv/one
                run nsctl bind "$ALICE" "$src" "$dest" || { stop_reader; fail "replacing bind $i ($src) failed"; return 1; }
        done
        stop_reader
        local mounts
        mounts=$(view_mounts_at "$dest")
        log "mounts at $dest: $mounts"
        [[ "$EMPTY" -eq 0 ]] || { fail "the reader saw $dest without a marker $EMPTY times in $LOOKS"; return 1; }
        [[ "$LOOKS" -gt 0 ]] || { fail "the reader did not run"; return 1; }
        [[ "$(as_alice "cat $dest/marker")" == one ]] || { fail "the view does not show the last bind"; return 1; }
        [[ $(grep -c . <<<"$mounts") -eq 1 ]] || { fail "$(grep -c . <<<"$mounts") mounts at $dest: replaced binds were stacked"; return 1; }
        [[ $(state_file | grep -c " $dest\$") -eq 1 ]] || { fail "the state file records $(state_file | grep -c " $dest\$") binds at $dest"; return 1; }
        run nsctl unmount "$ALICE" "$dest" || { fail "unmounting the replaced bind failed"; return 1; }
        [[ -z "$(view_mounts_at "$dest")" ]] || fail "after the unmount $dest still holds $(view_mounts_at "$dest")"
}

check_reader_sees_a_gap() {
        # The reader can see an empty destination: unmounted, then mounted again by hand.
        local dest=/home/alice/nsm-gap
        mkdir -p "$dest"
        nsctl attach "$ALICE" -- mount --bind /srv/one "$dest"
        start_reader "$dest"
        # Lazily: the reader's own lookups hold the mount for a moment, and a plain umount
        # then fails with EBUSY now and then (the binds would stack, and no gap would show).
        nsctl attach "$ALICE" -- sh -c "for i in 1 2 3 4 5 6; do umount -l '$dest'; mount --bind /srv/two '$dest'; done; umount -l '$dest'"
        stop_reader
        [[ "$EMPTY" -gt 0 ]] || fail "the reader never saw $dest empty although it was unmounted 6 times: it is too slow to prove anything"
}

check_replace_own_bind() {
        as_alice 'mkdir -p ~/own-a ~/own-b && echo a > ~/own-a/marker && echo b > ~/own-b/marker' || return 1
        local dest=/home/alice/own-dest
        run as_alice "nsctl bind alice /home/alice/own-a $dest --mkdir" || { fail "alice's first bind failed"; return 1; }
        start_reader "$dest"
        run as_alice "nsctl bind alice /home/alice/own-b $dest" || { stop_reader; fail "alice's replacing bind failed"; return 1; }
        stop_reader
        [[ "$EMPTY" -eq 0 ]] || { fail "the reader saw $dest empty"; return 1; }
        [[ "$(as_alice "cat $dest/marker")" == b ]] || { fail "alice's view does not show her new bind"; return 1; }
        [[ $(view_mounts_at "$dest" | grep -c .) -eq 1 ]] || { fail "binds stacked at $dest: $(view_mounts_at "$dest")"; return 1; }
        run as_alice "nsctl unmount alice $dest" || { fail "alice cannot unmount her replacing bind"; return 1; }
        [[ -z "$(view_mounts_at "$dest")" ]] || fail "still mounted at $dest"
}

check_replace_bind_with_mounts_below() {
        # An earlier bind with a mount below it: replaced (MOVE_MOUNT_BENEATH) or, before 6.5,
        # refused with Busy and left as it was.
        local dest=/home/alice/nsm-below out rc
        run mount -t tmpfs nsm-below /srv/three/sub || return 1
        run nsctl bind "$ALICE" /srv/three "$dest" --mkdir || { umount /srv/three/sub; fail "the first bind failed"; return 1; }
        log "mounts at $dest and below: $(view_mounts_at $dest) | $(view_mounts_at $dest/sub)"
        out=$(nsctl bind "$ALICE" /srv/two "$dest" 2>&1)
        rc=$?
        log "nsctl bind alice /srv/two $dest: exit $rc: $out"
        if kernel_at_least 6 5; then
                [[ $rc -eq 0 && "$(as_alice "cat $dest/marker")" == two ]] || { fail "not replaced: $out"; rc=2; }
        else
                if [[ $rc -ne 1 || "$out" != *"MOVE_MOUNT_BENEATH"* ]]; then
                        fail "expected a refusal naming MOVE_MOUNT_BENEATH, got exit $rc: $out"
                        rc=2
                elif [[ "$(as_alice "cat $dest/marker")" != three || -z "$(view_mounts_at $dest/sub)" ]]; then
                        fail "the refused replace changed the view"
                        rc=2
                fi
        fi
        run nsctl unmount "$ALICE" "$dest" --detach
        umount /srv/three/sub
        [[ $rc -ne 2 ]] || return 1
        [[ -z "$(view_mounts_at "$dest")" ]] || fail "still mounted at $dest"
}

refused() {
        local out rc
        out=$(as_alice "$1" 2>&1)
        rc=$?
        log "alice: $1 -> exit $rc: $out"
        [[ $rc -eq 1 && -n "$out" ]] || { fail "alice was not refused: $1 (exit $rc: $out)"; return 1; }
}

check_own_view_refusals() {
        as_alice 'mkdir -p ~/mine ~/mine-dst' || return 1
        refused "nsctl bind alice /etc /home/alice/mine-dst" || return 1              # not hers
        refused "nsctl bind alice /home/alice/mine /usr/local" || return 1            # not her destination
        refused "nsctl bind alice /home/alice/mine /mnt/nsm-own --mkdir" || return 1  # a shared subtree
        run nsctl bind "$ALICE" /srv/one /home/alice/root-bind --mkdir || { fail "root's bind failed"; return 1; }
        refused "nsctl unmount alice /home/alice/root-bind" || return 1               # root's
        refused "nsctl unmount alice /opt/nsm-policy" || return 1                     # the policy's
        refused "nsctl propagation alice /opt/nsm-policy shared" || return 1          # the policy's
        refused "nsctl share alice /home" || return 1                                 # not a shared subtree
        refused "nsctl bind bob /home/alice/mine /home/alice/mine-dst" || return 1    # another's view
        refused "nsctl remove bob" || return 1
        run nsctl unmount "$ALICE" /home/alice/root-bind
        run as_alice "nsctl bind alice /home/alice/mine /home/alice/mine-dst" || { fail "alice's own bind was refused"; return 1; }
        run as_alice "nsctl unmount alice /home/alice/mine-dst" || fail "alice's unmount of her own bind was refused"
}

# Before Linux 6.8 a mount id is reused by the next mount once the mount is gone. The daemon's
# records must not come to name the new mount.
reuse_id() {    # PATH ID: mounts alice-owned tmpfs on PATH in her view until one gets ID
        nsctl attach "$ALICE" -- sh -c "for i in \$(seq 40); do mount -t tmpfs -o uid=$ALICE_UID,gid=$ALICE_UID,mode=755 nsm-reuse '$1' || exit 1;
                [ \"\$(awk -v p='$1' '\$5 == p { id = \$1 } END { print id }' /proc/self/mountinfo)\" = $2 ] && exit 0;
                umount '$1'; done; exit 1"
}

check_reused_mount_id_of_a_bind() {
        local dest=/home/alice/nsm-reuse line id
        as_alice 'mkdir -p ~/reuse-src' || return 1
        run as_alice "nsctl bind alice /home/alice/reuse-src $dest --mkdir" || { fail "alice's bind failed"; return 1; }
        line=$(state_file | grep " $dest\$")
        id=$(view_mount_id "$dest")
        log "record: $line; mountinfo id $id"
        [[ "$line" == "BIND="*" $id user $dest" ]] || { fail "the record '$line' does not name mount $id"; return 1; }
        # Root unmounts it behind the daemon's back, and another mount gets its id.
        run nsctl attach "$ALICE" -- umount "$dest" || return 1
        reuse_id "$dest" "$id" || { fail "no tmpfs got the reused id $id"; return 1; }
        log "root's tmpfs on $dest now has id $(view_mount_id "$dest")"
        refused "nsctl unmount alice $dest" || return 1
        refused "nsctl bind alice /home/alice/reuse-src $dest" || return 1
        [[ -n "$(view_mounts_at "$dest")" ]] || { fail "root's tmpfs went"; return 1; }
        # Her next operation finds the bind gone and the daemon forgets it.
        run as_alice "nsctl bind alice /home/alice/reuse-src /home/alice/nsm-reuse-next --mkdir" || return 1
        run as_alice "nsctl unmount alice /home/alice/nsm-reuse-next" || return 1
        ! state_file | grep -q " $dest\$" || { fail "the gone bind is still recorded: $(state_file | grep " $dest\$")"; return 1; }
        run nsctl attach "$ALICE" -- umount "$dest"
}

check_reused_mount_id_of_a_policy_mount() {
        local id dest=/home/alice/nsm-reuse-policy i got=
        id=$(view_mount_id /opt/nsm-policy)
        log "policy mount /opt/nsm-policy: id $id; $(state_file | grep ^POLICY_MOUNT=)"
        state_file | grep -q "^POLICY_MOUNT=[0-9]* $id\$" || { fail "the policy mount $id is not recorded"; return 1; }
        run nsctl attach "$ALICE" -- umount /opt/nsm-policy || return 1
        as_alice 'mkdir -p ~/reuse-policy-src' || return 1
        for i in $(seq 20); do
                as_alice "nsctl bind alice /home/alice/reuse-policy-src $dest --mkdir" || { fail "alice's bind failed"; return 1; }
                got=$(view_mount_id "$dest")
                [[ "$got" == "$id" ]] && break
                as_alice "nsctl unmount alice $dest"
        done
        [[ "$got" == "$id" ]] || { fail "alice's bind never got the policy mount's reused id $id"; return 1; }
        log "alice's bind on $dest has the policy mount's old id $id"
        run as_alice "nsctl propagation alice $dest private" ||
                { fail "alice's own bind with the reused id passes for a [View] policy mount"; return 1; }
        run as_alice "nsctl unmount alice $dest" || fail "alice cannot unmount her bind with the reused id"
}

check_verify() {
        if ! nsctl --help 2>&1 | grep -qw verify; then
                echo "skip: nsctl has no 'verify' verb in this tree yet" >&3
                return 0
        fi
        run nsctl verify || { fail "nsctl verify of the installed configuration failed"; return 1; }
        printf '[Manager]\nNoSuchKey=1\n' >/etc/nsmanager/nsmanagerd.conf.d/90-nsmtest-bad.conf
        run nsctl verify
        local rc=$?
        rm -f /etc/nsmanager/nsmanagerd.conf.d/90-nsmtest-bad.conf
        [[ $rc -eq 1 ]] || fail "nsctl verify of a file with an unknown key exited $rc"
}

check_kill9_restart() {
        local old ns sessions
        old=$(main_pid) ns=$(ns_id $ALICE_UID)
        sessions=$(busctl get-property "$BUS" "/org/example/NSManager/user/_$ALICE_UID" "$BUS.Namespace" Sessions)
        run kill -KILL "$old"
        restarted() { local p; p=$(main_pid); [[ "$p" != 0 && "$p" != "$old" ]] && systemctl is-active --quiet "$UNIT"; }
        poll 60 restarted || { fail "$UNIT was not restarted after SIGKILL"; return 1; }
        log "restarted: pid $(main_pid)"
        [[ "$(ns_id $ALICE_UID)" == "$ns" ]] || { fail "the namespace changed: $(ns_id $ALICE_UID), was $ns"; return 1; }
        local now
        now=$(busctl get-property "$BUS" "/org/example/NSManager/user/_$ALICE_UID" "$BUS.Namespace" Sessions)
        log "sessions before: $sessions; after: $now"
        [[ "$(tr ' ' '\n' <<<"$now" | sort)" == "$(tr ' ' '\n' <<<"$sessions" | sort)" ]] ||
                { fail "the sessions changed across the restart: $sessions, then $now"; return 1; }
        [[ "$(as_alice 'readlink /proc/self/ns/mnt')" == "$ns" ]] || fail "a new login is not in the kept namespace"
}

check_upgrade_in_place() {
        local ns
        ns=$(ns_id $ALICE_UID)
        run env DEBIAN_FRONTEND=noninteractive dpkg -i /nsmtest/nsmanager.deb || { fail "installing the package again failed"; return 1; }
        run busctl call "$BUS" /org/example/NSManager "$BUS.Manager" ListNamespaces >/dev/null || { fail "no daemon after the upgrade"; return 1; }
        [[ "$(ns_id $ALICE_UID)" == "$ns" ]] || { fail "the namespace changed across the upgrade"; return 1; }
        [[ "$(as_alice 'readlink /proc/self/ns/mnt')" == "$ns" ]] || fail "a login after the upgrade is not in the kept namespace"
}

check_exposure() {
        local out
        out=$(systemd-analyze security --no-pager "$UNIT" | grep "Overall exposure")
        log "$out"
        run systemd-analyze security --no-pager --threshold=40 "$UNIT" >/dev/null || fail "$out (above 4.0)"
}

# Mount events: fanotify's from 6.15, else the host's mountinfo read at each change (the
# poll fallback). A follower of alice's view sees the host's tmpfs come and go, with
# where it came from.
check_mount_events() {
        local mode expected
        mode=$(busctl get-property "$BUS" /org/example/NSManager "$BUS.Manager" MountEvents | awk '{print $2}' | tr -d '"')
        kernel_at_least 6 15 && expected=fanotify || expected=poll
        log "MountEvents: $mode (kernel $KERNEL)"
        [[ "$mode" == "$expected" ]] || { fail "MountEvents is '$mode' on $KERNEL, expected '$expected'"; return 1; }
        # How the installed daemon reads tables, under the shipped unit: listmount(2) from 6.8 on
        # (the unit's deny-list leaves the syscalls its libseccomp does not know alone).
        local tables
        tables=$(journalctl --no-pager -b -u "$UNIT" -o cat -g 'Mount tables are read' | tail -n 1)
        log "$tables"
        if kernel_at_least 6 8; then
                [[ "$tables" == *listmount* ]] || { fail "the daemon does not use listmount(2) on $KERNEL: '$tables'"; return 1; }
        else
                [[ "$tables" == *mountinfo* ]] || { fail "the daemon does not say it reads mountinfo on $KERNEL: '$tables'"; return 1; }
        fi
        rm -f /run/nsmtest-follow
        nsctl mounts "$ALICE" --follow >/run/nsmtest-follow 2>&1 &
        local follower=$!
        # The header comes once the follower is subscribed (Subscribe answers after the read).
        poll 60 grep -q ORIGIN /run/nsmtest-follow || { kill $follower; fail "nsctl mounts --follow printed no header"; return 1; }
        mkdir -p /mnt/nsm-follow
        run mount -t tmpfs -o size=1m nsm-follow /mnt/nsm-follow
        poll 60 grep -q "^mount .*/mnt/nsm-follow.*from the host's /mnt" /run/nsmtest-follow ||
                { umount /mnt/nsm-follow; kill $follower; cat /run/nsmtest-follow; fail "the host's mount on /mnt did not show with its origin"; return 1; }
        run umount /mnt/nsm-follow
        poll 60 grep -q "^umount .*/mnt/nsm-follow" /run/nsmtest-follow ||
                { kill $follower; cat /run/nsmtest-follow; fail "the host's unmount did not show"; return 1; }
        kill $follower
        wait $follower 2>/dev/null
        cat /run/nsmtest-follow
}

# Eject and ReleaseWithHost= (the default): a USB stick on a loop device, mounted on the host's
# /mnt/usb; bob's copy made private in his view; the host's umount alone frees the device, then
# an Eject of a second mount of it detaches alice's bind of a subdirectory too.
check_eject() {
        local img=/var/tmp/nsm-usb.img dev
        rm -f "$img"
        truncate -s 16M "$img" && mkfs.ext4 -q "$img" || { fail "mkfs.ext4 failed"; return 1; }
        dev=$(losetup --find --show "$img") || { fail "losetup failed"; return 1; }
        mkdir -p /mnt/usb
        run mount "$dev" /mnt/usb && mkdir -p /mnt/usb/sub && echo stick >/mnt/usb/sub/marker
        nsctl create "$BOB" >/dev/null
        poll 30 sh -c "nsctl attach $BOB -- findmnt -n /mnt/usb >/dev/null" || { fail "bob's view lacks /mnt/usb"; return 1; }
        run nsctl propagation "$BOB" /mnt/usb private || { fail "making bob's copy private failed"; return 1; }
        run umount /mnt/usb
        # The device is free once nobody holds a mount of it: bob's private copy is released.
        # open(O_EXCL) of a block device fails while any mount of it exists (perl-base is
        # essential in Debian; losetup -d would prove nothing: on a busy device it only sets
        # autoclear).
        free() { perl -e 'use Fcntl; sysopen(my $fh, $ARGV[0], O_RDONLY | O_EXCL) or exit 1' "$dev"; }
        poll 30 free || { fail "the device stays busy after the host's umount (ReleaseWithHost=)"; losetup -d "$dev"; return 1; }
        run mount "$dev" /mnt/usb
        run nsctl bind "$ALICE" /mnt/usb/sub /home/alice/usb-sub --mkdir || { fail "bind of a subdirectory failed"; return 1; }
        run nsctl eject "$dev" || { fail "nsctl eject failed"; return 1; }
        poll 30 free || { fail "the device stays busy after the eject"; losetup -d "$dev"; return 1; }
        [[ "$(as_alice 'findmnt -n /home/alice/usb-sub || echo none')" == none ]] || fail "alice's bind stayed"
        losetup -d "$dev"
        rm -f "$img"
        rmdir /home/alice/usb-sub 2>/dev/null
        nsctl remove "$BOB" >/dev/null
}

# The desktop, for real: udisks2 mounts a stick for alice (a loop device of a file of hers, as
# udisksctl loop-setup makes one; a test polkit rule lets her, as a desktop's active session
# would), it is in every view, an administrator binds part of it into her view, nsctl eject
# names her process that holds it, and once that is gone the desktop's unmount frees the
# device: ReleaseWithHost= detaches the administrator's bind.
check_desktop_stick() {
        command -v udisksctl >/dev/null || { echo "skip: udisks2 is not in the image (tools/qemu-image)" >&3; return 0; }
        local img=/home/alice/nsm-stick.img dev="" where out holder="" spid u rule=/etc/polkit-1/rules.d/50-nsmtest-udisks.rules
        free() { perl -e 'use Fcntl; sysopen(my $fh, $ARGV[0], O_RDONLY | O_EXCL) or exit 1' "$dev"; }
        cleanup() {
                [[ -n "$holder" ]] && kill "$holder" 2>/dev/null
                [[ -n "$dev" ]] && udisksctl loop-delete --no-user-interaction -b "$dev" >/dev/null 2>&1
                rm -f "$rule" "$img"
                rmdir /home/alice/stick-sub 2>/dev/null
                nsctl remove "$BOB" >/dev/null 2>&1
                return 0
        }
        truncate -s 16M "$img" && mkfs.ext4 -q -L NSMSTICK "$img" && chown "$ALICE:" "$img" || { fail "mkfs.ext4 failed"; return 1; }
        printf '%s\n' 'polkit.addRule(function(action, subject) {' \
                '        if (action.id.indexOf("org.freedesktop.udisks2.") == 0 && subject.user == "alice")' \
                '                return polkit.Result.YES;' '});' >"$rule"
        # Until polkitd has read the rule (it watches rules.d).
        loop_setup() { out=$(as_alice "udisksctl loop-setup --no-user-interaction -f $img" 2>&1); }
        poll 60 loop_setup || { fail "udisksctl loop-setup as alice failed: $out"; cleanup; return 1; }
        log "$out"
        dev=$(sed -n 's/.* as \(\/dev\/loop[0-9]*\)\.*$/\1/p' <<<"$out")
        [[ -n "$dev" ]] || { fail "no loop device in: $out"; cleanup; return 1; }
        udisks_mount() { out=$(as_alice "udisksctl mount --no-user-interaction -b $dev" 2>&1); }
        poll 30 udisks_mount || { fail "udisksctl mount as alice failed: $out"; cleanup; return 1; }
        log "$out"
        where=$(sed -n 's/^Mounted .* at \(.*\)$/\1/p' <<<"$out"); where=${where%.}
        [[ -n "$where" && -d "$where" ]] || { fail "no mount point in: $out"; cleanup; return 1; }
        nsctl create "$BOB" >/dev/null
        for u in "$ALICE" "$BOB"; do
                poll 30 sh -c "nsctl attach $u -- findmnt -n '$where' >/dev/null" ||
                        { fail "the view of $u lacks udisks' $where"; cleanup; return 1; }
        done
        log "$where is in the views of $ALICE and $BOB"
        mkdir "$where/sub" && chmod 0777 "$where/sub"
        run nsctl bind "$ALICE" "$where/sub" /home/alice/stick-sub --mkdir || { fail "the administrator's bind failed"; cleanup; return 1; }
        su -l "$ALICE" -c 'cd ~/stick-sub && exec sleep 301' </dev/null >/dev/null 2>&1 &
        holder=$!
        poll 30 pgrep -u "$ALICE" -x -f 'sleep 301' || { fail "alice's holder did not start"; cleanup; return 1; }
        spid=$(pgrep -u "$ALICE" -x -f 'sleep 301')
        out=$(nsctl eject "$dev" 2>&1) && { fail "nsctl eject of a busy stick succeeded: $out"; cleanup; return 1; }
        log "$out"
        grep -qF "pid $spid (sleep) of alice, in the view of 'alice': working directory on /home/alice/stick-sub" <<<"$out" ||
                { fail "nsctl eject did not name alice's sleep $spid: $out"; cleanup; return 1; }
        kill "$spid"; wait "$holder" 2>/dev/null; holder=""
        run as_alice "udisksctl unmount --no-user-interaction -b $dev" || { fail "udisksctl unmount as alice failed"; cleanup; return 1; }
        poll 30 free || { fail "the device stays busy after the desktop's unmount (the administrator's bind in alice's view)"; cleanup; return 1; }
        [[ "$(as_alice 'findmnt -n /home/alice/stick-sub || echo none')" == none ]] || { fail "alice's bind stayed"; cleanup; return 1; }
        log "$(journalctl --no-pager -b -u "$UNIT" -o cat -g 'block device' | tail -2)"
        run as_alice "udisksctl loop-delete --no-user-interaction -b $dev" && dev=""
        cleanup
}

# A systemd automount on the host's /mnt, triggered from inside alice's view: mounted for
# everyone, and expired for everyone.
check_automount() {
        grep -qw autofs /proc/filesystems || modprobe autofs4 2>/dev/null
        grep -qw autofs /proc/filesystems || { echo "skip: this kernel has no autofs" >&3; return 0; }
        local out unit=/etc/systemd/system/mnt-nsmauto
        printf '[Mount]\nWhat=nsm-auto\nWhere=/mnt/nsmauto\nType=tmpfs\nOptions=size=1m\n' >"$unit.mount"
        printf '[Automount]\nWhere=/mnt/nsmauto\nTimeoutIdleSec=2s\n' >"$unit.automount"
        cleanup() {
                systemctl stop mnt-nsmauto.automount mnt-nsmauto.mount 2>/dev/null
                rm -f "$unit.mount" "$unit.automount"
                systemctl daemon-reload
                return 0
        }
        systemctl daemon-reload
        run systemctl start mnt-nsmauto.automount || { fail "systemctl start mnt-nsmauto.automount failed"; cleanup; return 1; }
        # The types of the mounts at /mnt/nsmauto, bottom first, from mountinfo: findmnt PATH
        # would look up the path, and each look resets the idle timer.
        local types='$5 == "/mnt/nsmauto" { for (i = 7; $i != "-"; i++); printf "%s ", $(i + 1) }'
        host_types() { awk "$types" /proc/self/mountinfo; }
        view_types() { nsctl attach "$ALICE" -- awk "$types" /proc/self/mountinfo; }
        on_host() { [[ "$(host_types)" == "$1" ]]; }
        in_view() { [[ "$(view_types)" == "$1" ]]; }
        poll 30 in_view "autofs " || { fail "alice's view lacks the autofs mount: $(view_types)"; cleanup; return 1; }
        out=$(as_alice 'stat -f -c %T /mnt/nsmauto/; readlink /proc/self/ns/mnt' | tr '\n' ' ')
        log "alice's look inside: $out"
        [[ "$out" == "tmpfs $(ns_id $ALICE_UID) " ]] || { fail "alice's look did not mount the tmpfs in her view: $out"; cleanup; return 1; }
        on_host "autofs tmpfs " || { fail "the host lacks the tmpfs: $(host_types)"; cleanup; return 1; }
        in_view "autofs tmpfs " || { fail "alice's view lacks the tmpfs: $(view_types)"; cleanup; return 1; }
        expired() { on_host "autofs " && in_view "autofs "; }
        poll 60 expired || { fail "the idle tmpfs was not unmounted everywhere: host $(host_types), view $(view_types)"; cleanup; return 1; }
        log "expired on the host and in alice's view"
        cleanup
}

# The desktop image only (tests/test_qemu.py's test_graphical_login, tools/qemu-image
# --desktop): lightdm logs alice in automatically on seat0, Xorg on the emulated VGA
# (bochs-drm, modesetting), into a session that is a script and its child. The session's
# processes, the script, its child and her systemd --user must all be in her view, and logind
# must show an x11 session on seat0 that lightdm's autologin PAM service opened.
check_graphical_login() {
        command -v lightdm >/dev/null || { echo "skip: this image has no lightdm (tools/qemu-image --desktop)" >&3; return 0; }
        local start=$SECONDS
        seat_graphical() { [[ "$(loginctl show-seat seat0 -p CanGraphical --value)" == yes ]]; }
        # bochs-drm's card0 is tagged master-of-seat by udev: then seat0 can be graphical.
        poll 120 seat_graphical || { fail "seat0 is not graphical: $(ls /dev/dri 2>&1 | tr '\n' ' ') $(loginctl seat-status seat0 2>&1 | tr '\n' ' ')"; return 1; }
        log "seat0 graphical after ${SECONDS}s of the boot's checks; $(ls /dev/dri | tr '\n' ' ')"
        mkdir -p /usr/share/xsessions /etc/lightdm/lightdm.conf.d
        cat >/usr/local/bin/nsmtest-xsession <<'EOF2'
#!/bin/sh
# The whole X session of the check: itself and one child, until the check is done.
sleep 100000 &
wait
EOF2
        chmod 755 /usr/local/bin/nsmtest-xsession
        printf '[Desktop Entry]\nName=nsmtest\nExec=/usr/local/bin/nsmtest-xsession\nType=Application\n' \
                >/usr/share/xsessions/nsmtest.desktop
        printf '[Seat:*]\nautologin-user=%s\nautologin-user-timeout=0\nautologin-session=nsmtest\nuser-session=nsmtest\n' \
                "$ALICE" >/etc/lightdm/lightdm.conf.d/50-nsmtest.conf
        # A mount point the policy makes in her home (check_policy_mount_points, below).
        printf 'TemporaryFileSystem=%%h/nsm-made/x\n' >>/etc/nsmanager/user.d/alice.conf
        run nsctl reload || { fail "nsctl reload failed"; return 1; }
        run systemctl start lightdm.service || { fail "systemctl start lightdm failed"; return 1; }
        local xpid=
        find_xsession() { xpid=$(pgrep -u "$ALICE" -f -o '^/bin/sh /usr/local/bin/nsmtest-xsession'); [[ -n "$xpid" ]]; }
        if ! poll 300 find_xsession; then
                log "lightdm: $(systemctl is-active lightdm.service)"
                tail -n 20 /var/log/lightdm/lightdm.log /var/log/lightdm/x-0.log /var/log/Xorg.0.log 2>/dev/null | sed 's/^/    /' >&2
                fail "no X session of alice within 300 s of starting lightdm"
                return 1
        fi
        log "the X session's script is pid $xpid, $((SECONDS - start)) s after the seat was checked"
        local session
        session=$(awk -F'session-|[.]scope' '/^0::/ {print $2}' /proc/$xpid/cgroup)
        local props
        props=$(loginctl show-session "$session" -p Type -p Seat -p Service -p Class -p Name -p State -p VTNr)
        log "loginctl show-session $session: $(echo $props)"
        grep -qx Type=x11 <<<"$props" || { fail "session $session is not Type=x11: $(echo $props)"; return 1; }
        grep -qx Seat=seat0 <<<"$props" || { fail "session $session is not on seat0: $(echo $props)"; return 1; }
        grep -qx Service=lightdm-autologin <<<"$props" || { fail "session $session was not opened by lightdm's autologin: $(echo $props)"; return 1; }
        grep -qx "Name=$ALICE" <<<"$props" || { fail "session $session is not alice's: $(echo $props)"; return 1; }

        local want pid ns child umgr status bad=
        want=$(ns_id $ALICE_UID)
        [[ -n "$want" ]] || { fail "alice has no namespace"; return 1; }
        child=$(pgrep -P "$xpid" -x sleep)
        umgr=$(systemctl show -p MainPID --value "user@$ALICE_UID.service")
        status=$(nsctl status "$ALICE")
        log "$status"
        for pid in $( (cat "/sys/fs/cgroup/user.slice/user-$ALICE_UID.slice/session-$session.scope/cgroup.procs"; echo $child $umgr) | tr ' ' '\n' | sort -un); do
                ns=$(readlink /proc/$pid/ns/mnt) || continue     # gone meanwhile
                log "pid $pid ($(cat /proc/$pid/comm), uid $(stat -c %u /proc/$pid)): $ns"
                [[ "$ns" == "$want" ]] || bad+=" $pid($(cat /proc/$pid/comm))"
        done
        [[ -n "$child" && -n "$umgr" && "$umgr" != 0 ]] || { fail "the session's child ($child) or systemd --user ($umgr) is missing"; return 1; }
        [[ -z "$bad" ]] || { fail "not in alice's view ($want):$bad"; return 1; }
        for pid in "$xpid" "$child" "$umgr"; do
                awk -v p="$pid" '/Processes:/ {on = 1} on { for (i = 1; i <= NF; i++) if ($i == p) found = 1 } END { exit !found }' \
                        <<<"$status" || { fail "nsctl status $ALICE does not list pid $pid"; return 1; }
        done
        log "X server (lightdm's, outside any session): $(pgrep -a Xorg | head -n 1)"
}

# After graphical_login, under the shipped unit (no CAP_CHOWN): the mount point the policy
# made in alice's real home is hers while the view lasts, and gone once the view is.
check_policy_mount_points() {
        local owners
        owners=$(stat -c %U /home/alice/nsm-made /home/alice/nsm-made/x 2>&1 | tr '\n' ' ')
        log "owners of ~alice/nsm-made and nsm-made/x on the host: $owners"
        [[ "$owners" == "alice alice " ]] || { fail "the mount points made in her home: $owners"; return 1; }
        run systemctl stop lightdm.service "user@$ALICE_UID.service"
        run nsctl remove "$ALICE" || { fail "nsctl remove alice failed"; return 1; }
        poll 60 test ! -e /home/alice/nsm-made || { fail "~alice/nsm-made is still there after her view ended: $(ls -la /home/alice/nsm-made)"; return 1; }
        log "gone with the view: $(ls -A /home/alice | tr '\n' ' ')"
}

check_no_errors_logged() {
        local errors
        errors=$(journalctl --no-pager -b -u "$UNIT" -p err -o cat)
        [[ -z "$errors" ]] || fail "errors of $UNIT: $errors"
}

check kernel check_kernel
check install check_install
if [[ -e /nsmtest/desktop ]]; then
        # The desktop image boots for the graphical login alone (tests/test_qemu.py).
        check unit_active check_unit_active
        check graphical_login check_graphical_login
        check policy_mount_points check_policy_mount_points
        check no_errors_logged check_no_errors_logged
        echo "CHECKS DONE"
        exit 0
fi
check unit_active check_unit_active
check cron_scheduled check_cron_scheduled
check su_login check_su_login
check sudo check_sudo
check ssh check_ssh
check user_manager check_user_manager
check host_mount_reaches_view check_host_mount_reaches_view
check attach_as_user check_attach_as_user
check nsctl_verbs check_nsctl_verbs
check reader_sees_a_gap check_reader_sees_a_gap
check replace_bind check_replace_bind
check replace_own_bind check_replace_own_bind
check replace_bind_with_mounts_below check_replace_bind_with_mounts_below
check own_view_refusals check_own_view_refusals
check reused_mount_id_of_a_bind check_reused_mount_id_of_a_bind
check reused_mount_id_of_a_policy_mount check_reused_mount_id_of_a_policy_mount
check verify check_verify
check mount_events check_mount_events
check eject check_eject
check desktop_stick check_desktop_stick
check automount check_automount
check kill9_restart check_kill9_restart
check upgrade_in_place check_upgrade_in_place
check cron check_cron
check exposure check_exposure
check no_errors_logged check_no_errors_logged
[[ -n "$LOGIN_PID" ]] && kill "$LOGIN_PID" 2>/dev/null
echo "CHECKS DONE"
