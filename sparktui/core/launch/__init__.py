"""Launch commands: the one lexer (lexer), the engines' command lines as data (tables), the pre-launch reader
(serve), the SGLang -> vLLM translator (sglang_to_vllm), and a container's docker run from docker inspect."""
