#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm Epilog (slurm.conf: Epilog=/etc/slurm/epilog.sh): clears the job's node-local cache when the job ends.
# `granary clear` removes only a Granary disk-tier directory: anything else left there is reported, not deleted.
set -uo pipefail

GRANARY=/opt/granary/granary
cache="/local/scratch/granary-$SLURM_JOB_ID"
if [[ -d "$cache" ]]; then
  "$GRANARY" clear "$cache" || echo "granary clear $cache failed (exit $?): left for the administrator" >&2
fi
exit 0
