"""The finding categories: a stable public interface (see ``taxonomy.md``)."""

from __future__ import annotations

CATEGORIES: dict[str, str] = {
    "nccl_multinode_hang": "NCCL communicator init or the first collective stalls with no error",
    "nccl_timeout_watchdog": "a collective ran past the process-group timeout",
    "nccl_network_iface": "NCCL or Gloo cannot reach peers or pick a transport",
    "c10d_store_connect_failed": "the torch.distributed rendezvous cannot connect or times out",
    "missing_ray_backend": "multi-node parallelism launched without the distributed runtime it needs",
    "ray_node_ip_mismatch": "the engine and Ray disagree on a node's IP",
    "ray_cluster_connect": "a node cannot join or reach the Ray cluster",
    "ray_host_oom_killer": "workers killed for host memory pressure",
    "model_arch_unsupported": "the model files need an architecture the installed engine does not know",
    "cuda_oom_or_kv_cache": "GPU out of memory or not enough room for the KV cache",
    "driver_or_cuda_mismatch": "GPU architecture not compiled in, or driver too old for the CUDA runtime",
    "docker_or_shm": "container set-up: /dev/shm, GPU visibility, IPC, host networking",
    "duplicate_gpu_rank": "two ranks on the same GPU",
    "quantization_unsupported_gpu": "a quantization method this GPU or the kernels do not support",
    "port_in_use": "a port the server, Ray or the rendezvous needs is already bound",
    "image_or_model_missing": "the image or model files are missing on some nodes or cannot be fetched",
    "engine_crash": "an engine process died for a reason no other category explains",
}
