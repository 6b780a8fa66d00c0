/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Doubly-linked lists threaded through the items themselves: an item has 'prev' and 'next'
 * pointers, 'head' is the pointer to the first item (an lvalue). */

#define LIST_PREPEND(head, item)                                \
        do {                                                    \
                (item)->prev = NULL;                            \
                (item)->next = (head);                          \
                if ((item)->next)                               \
                        (item)->next->prev = (item);            \
                (head) = (item);                                \
        } while (0)

/* 'item' must be in the list of 'head'. */
#define LIST_REMOVE(head, item)                                 \
        do {                                                    \
                if ((item)->next)                               \
                        (item)->next->prev = (item)->prev;      \
                if ((item)->prev)                               \
                        (item)->prev->next = (item)->next;      \
                else                                            \
                        (head) = (item)->next;                  \
                (item)->prev = (item)->next = NULL;             \
        } while (0)
