package serverlab.contract;

import java.nio.charset.StandardCharsets;

/**
 * A status and a body, ready to write. Every body is ASCII; the bytes are shared between requests
 * and must not be modified.
 *
 * @param status the HTTP status code
 * @param body the body bytes, sent with {@link #CONTENT_TYPE}
 */
public record Reply(int status, byte[] body) {

  /** The Content-Type of every 200 and 400, spelled exactly as the contract does. */
  public static final String CONTENT_TYPE = "text/plain; charset=utf-8";

  /** The Allow header of a 405: the methods of both routes. */
  public static final String ALLOW = "GET, HEAD";

  /** Body of the 400 for a bad {@code n}. */
  public static final String N_ERROR = "n must be an integer between 1 and 100";

  /** Body of the 400 for a bad {@code at}. */
  public static final String AT_ERROR = "at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]";

  public static final Reply BAD_N = of(400, N_ERROR);
  public static final Reply BAD_AT = of(400, AT_ERROR);
  public static final Reply NOT_FOUND = of(404, "Not Found");
  public static final Reply METHOD_NOT_ALLOWED = of(405, "Method Not Allowed");

  /** A reply whose body is {@code text} in UTF-8. */
  public static Reply of(int status, String text) {
    return new Reply(status, text.getBytes(StandardCharsets.UTF_8));
  }

  /** The body as text, for tests and logs. */
  public String text() {
    return new String(body, StandardCharsets.UTF_8);
  }
}
