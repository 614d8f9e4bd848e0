"""One isolated, instrumented vLLM boot and what vLLM printed. Imports without vLLM.

The boot result it returns is ``document.boot_result``'s: the result document is the
package below this one."""
