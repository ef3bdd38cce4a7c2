# SPDX-License-Identifier: GPL-2.0
# Ansible callback plugin: each Ansible task becomes a taskprobe phase, so that
#   taskprobe run -- ansible-playbook site.yml
# reports CPU, memory, disk and execs per Ansible task (what cgroup_perf_recap tried,
# here with cgroup v2, short tasks and crashes handled by taskprobe). Standard
# library only. Enable it with:
#   ANSIBLE_CALLBACK_PLUGINS=/path/to/scripts/integrations/ansible
#   ANSIBLE_CALLBACKS_ENABLED=taskprobe
# Outside `taskprobe run` (no TASKPROBE_SOCKET) it does nothing.
from __future__ import absolute_import, division, print_function

import os
import re
import socket

from ansible.plugins.callback import CallbackBase

__metaclass__ = type

DOCUMENTATION = """
    name: taskprobe
    type: aggregate
    short_description: mark each Ansible task as a taskprobe phase
    description:
      - Sends phase:begin/phase:end lines to the metrics socket of the taskprobe task
        the playbook runs in (TASKPROBE_SOCKET).
"""

_NAME_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def phase_name(name):
    """Ansible task names are free text; phase names are [A-Za-z0-9_.-]{1,200}."""
    cleaned = _NAME_BAD.sub("_", name or "").strip("_")[:200]
    return cleaned or "task"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "taskprobe"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._path = os.environ.get("TASKPROBE_SOCKET")
        self._open = None

    def _send(self, line):
        if not self._path:
            return
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            # An autobound address, so that the collector can answer: waiting for its
            # "ok" keeps the phase boundaries in order with the work around them.
            s.bind("")
            s.settimeout(2.0)
            s.sendto(line.encode(), self._path)
            s.recv(8)
        except OSError as e:
            self._display.warning("taskprobe: %s: %s" % (line, e))
        finally:
            s.close()

    def _end(self):
        if self._open:
            self._send("phase:end:" + self._open)
            self._open = None

    def _begin(self, task):
        self._end()
        self._open = phase_name(task.get_name())
        self._send("phase:begin:" + self._open)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._begin(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._begin(task)

    def v2_playbook_on_stats(self, stats):
        self._end()
