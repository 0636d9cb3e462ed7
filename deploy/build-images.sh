#!/usr/bin/env bash
# Build both images of deploy/Dockerfile, and push them when asked:
#
#   bash deploy/build-images.sh [--push] [NAME]
#
# NAME: the image name without its tag, default `selfplay`; with a registry in front
# (ghcr.io/YOU/selfplay, ACCOUNT.dkr.ecr.REGION.amazonaws.com/selfplay,
# REGION-docker.pkg.dev/PROJECT/REPO/selfplay) for a cluster's nodes to pull from.
# Builds NAME:cpu (head, CPU workers) and NAME:cuda (GPU workers) from the repository
# root; --push pushes both (log in to the registry first: deploy/README.md).
# The CPU build comes first: the CUDA build reuses its system-package layers.
set -euo pipefail
push=0
if [ "${1:-}" = "--push" ]; then
    push=1
    shift
fi
name="${1:-selfplay}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
docker build -f deploy/Dockerfile --build-arg VARIANT=cpu -t "$name:cpu" .
docker build -f deploy/Dockerfile --build-arg VARIANT=cuda -t "$name:cuda" .
if [ "$push" = 1 ]; then
    docker push "$name:cpu"
    docker push "$name:cuda"
fi
echo "built $name:cpu and $name:cuda$([ "$push" = 1 ] && echo ', pushed')"
