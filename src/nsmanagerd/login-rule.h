/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "login-filter.h"
#include "manager-config.h"

/* What the daemon publishes for pam_nsmanager (login-filter.h): the user range and
 * LoginWithoutView=, with, for `restricted`, what each file of the [View] policy does to
 * each setting. Compiled from the configuration in force, with the daemon's own parsers: a
 * file's assignments are applied once on top of nothing set and once on top of everything
 * set, and what differs is what it leaves alone. -ENOMEM is the only error. */
int login_rule_compile(const ManagerConfig *c, LoginFilter *ret);

/* The text login_filter_parse() reads back (the module has no business writing it). */
int login_filter_format(const LoginFilter *f, char **ret);

/* Writes it to NSM_LOGIN_FILTER_FILE and NSM_LOGIN_FILTER_PERSISTENT_FILE (atomically, the
 * latter fsync()ed: it must hold after a crash or a power cut as well as after a reboot).
 * Logs its failures; 0 if the copy under /run was written. */
int login_rule_publish(const LoginFilter *f);
