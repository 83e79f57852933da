/**
 * Contract v1 of serverlab in plain Java, written once and shared by every JVM stack.
 *
 * <p>Nothing here depends on a web framework: the stacks hand in the raw query string and get back
 * a {@link serverlab.contract.Reply} (status and body bytes) to write with their own API.
 */
package serverlab.contract;
