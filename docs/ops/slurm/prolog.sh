#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/prolog.sh; PrologFlags=Alloc so it runs at allocation, on every node
# of the job, before the first step). Runs as root: it stages the dataset a job asked for with
#   sbatch --comment=granary:s3://train-data/imagenet/train/ ...
# into node-local scratch owned by the job's user. A non-zero exit drains the node, so failures to stage are
# reported and do not fail the node (the job then reads from the origin, slower but correct).
set -uo pipefail

GRANARY=/opt/granary/granary
SCRATCH=/local/scratch
comment=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*Comment=granary:\([^ ]*\).*/\1/p')
[[ -n "$comment" ]] || exit 0

cache="$SCRATCH/granary-$SLURM_JOB_ID"
install -d -m 0700 -o "$SLURM_JOB_USER" "$cache"
if ! runuser -u "$SLURM_JOB_USER" -- "$GRANARY" prestage "$comment" --disk "$cache" --capacity 500G \
    --progress lines --interval 60 >>"/var/log/slurm/granary-prestage-$SLURM_JOB_ID.log" 2>&1; then
  echo "granary prestage for job $SLURM_JOB_ID failed; see /var/log/slurm/granary-prestage-$SLURM_JOB_ID.log" >&2
fi
exit 0
