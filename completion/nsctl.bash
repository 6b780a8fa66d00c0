# SPDX-License-Identifier: LGPL-2.1-or-later
# bash completion for nsctl(1)

__nsctl_users() {
        # Users with a namespace, from the daemon (of -H/-M, if given: "$@"); falls back to
        # the users NSS knows.
        local users
        users=$(nsctl "$@" --no-pager list --json=short 2>/dev/null |
                sed -n 's/"user":"\([^"]*\)"/\n\1\n/gp' | sed -n '/^[A-Za-z0-9_][A-Za-z0-9_.-]*[$]\{0,1\}$/p')
        if [[ -z $users ]]; then
                users=$(getent passwd 2>/dev/null | cut -d: -f1)
        fi
        printf '%s\n' $users
}

__nsctl_all_users() {
        getent passwd 2>/dev/null | cut -d: -f1
}

_nsctl() {
        local cur prev words cword
        _init_completion -n : 2>/dev/null || {
                cur=${COMP_WORDS[COMP_CWORD]}
                prev=${COMP_WORDS[COMP_CWORD-1]}
                words=("${COMP_WORDS[@]}")
                cword=$COMP_CWORD
        }

        local verbs='list status mounts create remove attach share enslave propagation bind unmount linger eject reload verify'
        local common='--no-pager --no-ask-password --ask-password -h --help -H --host -M --machine'
        local -A opts=(
                [list]='--json --no-legend'
                [status]='--json'
                [mounts]='--json --graph --no-legend --follow --output --real --types'
                [propagation]='--recursive --id'
                [bind]='--read-only --mkdir'
                [unmount]='--detach --id'
                [verify]='--config --user'
                [eject]='--lazy --json --no-legend'
        )

        # The argument of -H/-M: a host from ssh's known hosts, a running container.
        case $prev in
        -H|--host)
                if declare -F _known_hosts_real >/dev/null; then
                        _known_hosts_real -a -- "$cur"
                fi
                return
                ;;
        -M|--machine)
                COMPREPLY=($(compgen -W "$(machinectl list --no-legend --no-pager 2>/dev/null | cut -d' ' -f1)" -- "$cur"))
                return
                ;;
        --id)
                # a mount id: nothing to offer
                return
                ;;
        --config)
                COMPREPLY=($(compgen -f -- "$cur"))
                return
                ;;
        --user)
                COMPREPLY=($(compgen -u -- "$cur"))
                return
                ;;
        -o|--output)
                COMPREPLY=($(compgen -W "TARGET SOURCE FSTYPE PROPAGATION PEER MASTER PROPAGATES-TO ID PARENT" -- "${cur##*,}"))
                return
                ;;
        -t|--types)
                COMPREPLY=($(compgen -W "$(awk '{print $NF}' /proc/filesystems 2>/dev/null)" -- "${cur##*,}"))
                return
                ;;
        esac

        # The verb and the positional arguments before the cursor; after "--" (attach)
        # complete the command line to run. -H/-M and their argument go to __nsctl_users.
        local verb= i w
        local -a args=() transport=()
        for ((i = 1; i < cword; i++)); do
                w=${words[i]}
                case $w in
                -H|--host|-M|--machine)
                        transport+=("$w" "${words[i+1]}")
                        ((i++))
                        continue
                        ;;
                --host=*|--machine=*)
                        transport+=("$w")
                        continue
                        ;;
                --config|--user|-o|--output|-t|--types|--id)
                        ((i++))
                        continue
                        ;;
                esac
                if [[ $w == -- ]]; then
                        if [[ $verb == attach ]]; then
                                local cmd_start=$((i + 1))
                                if ((cword == cmd_start)); then
                                        COMPREPLY=($(compgen -c -- "$cur" | sort -u))
                                else
                                        COMPREPLY=($(compgen -f -- "$cur"))
                                fi
                                return
                        fi
                        continue
                fi
                [[ $w == -* ]] && continue
                if [[ -z $verb ]]; then
                        verb=$w
                else
                        args+=("$w")
                fi
        done

        if [[ $cur == -* ]]; then
                if [[ -z $verb ]]; then
                        COMPREPLY=($(compgen -W "$common --version -V --json --graph --recursive --read-only --mkdir --detach --no-legend --config --user --follow --lazy --output --real --types --id" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$common ${opts[$verb]}" -- "$cur"))
                fi
                return
        fi

        if [[ -z $verb ]]; then
                COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
                return
        fi

        local n=${#args[@]}
        case $verb in
        status|remove|mounts)
                ((n == 0)) && COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                ;;
        create)
                ((n == 0)) && COMPREPLY=($(compgen -W "$(__nsctl_all_users)" -- "$cur"))
                ;;
        eject)
                # a block device or a mount point of the host
                ((n == 0)) && COMPREPLY=($(compgen -W "$(findmnt -rn -o TARGET,SOURCE 2>/dev/null | tr ' ' '\n' | sed -n '\#^/dev/#p; \#^/media/#p; \#^/mnt/#p' | sort -u)" -- "$cur"))
                ;;
        attach)
                if ((n == 0)); then
                        COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                elif ((n == 1)); then
                        COMPREPLY=($(compgen -W "--" -- "$cur"))
                fi
                ;;
        linger)
                if ((n == 0)); then
                        COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                elif ((n == 1)); then
                        COMPREPLY=($(compgen -W "yes no" -- "$cur"))
                fi
                ;;
        enslave|unmount)
                if ((n == 0)); then
                        COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                elif ((n == 1)); then
                        COMPREPLY=($(compgen -d -- "$cur"))
                fi
                ;;
        share)
                # [USER] PATH: a path once a path or a user was given; else either
                if ((n == 0)); then
                        if [[ $cur == /* ]]; then
                                COMPREPLY=($(compgen -d -- "$cur"))
                        else
                                COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                        fi
                elif ((n == 1)) && [[ ${args[0]} != /* ]]; then
                        COMPREPLY=($(compgen -d -- "$cur"))
                fi
                ;;
        propagation)
                # [USER] PATH MODE
                local modes='shared slave private unbindable'
                if ((n == 0)); then
                        if [[ $cur == /* ]]; then
                                COMPREPLY=($(compgen -d -- "$cur"))
                        else
                                COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                        fi
                elif ((n == 1)); then
                        if [[ ${args[0]} == /* ]]; then
                                COMPREPLY=($(compgen -W "$modes" -- "$cur"))
                        else
                                COMPREPLY=($(compgen -d -- "$cur"))
                        fi
                elif ((n == 2)) && [[ ${args[0]} != /* ]]; then
                        COMPREPLY=($(compgen -W "$modes" -- "$cur"))
                fi
                ;;
        verify)
                # configuration files: any number
                COMPREPLY=($(compgen -f -- "$cur"))
                ;;
        bind)
                if ((n == 0)); then
                        COMPREPLY=($(compgen -W "$(__nsctl_users "${transport[@]}")" -- "$cur"))
                elif ((n == 1 || n == 2)); then
                        COMPREPLY=($(compgen -f -- "$cur"))
                fi
                ;;
        esac
}

complete -F _nsctl nsctl
