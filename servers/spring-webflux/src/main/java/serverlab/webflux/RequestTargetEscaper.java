package serverlab.webflux;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpRequest;

/**
 * Percent-encodes the characters of a request target that {@link java.net.URI} refuses, before
 * Spring sees the request.
 *
 * <p>Spring WebFlux exposes the request URI as a {@code java.net.URI}. For a target such as {@code
 * /?n=%ZZ} or {@code /?n=1|2} that constructor throws, and Spring's Reactor Netty adapter answers
 * an empty 400 before any application code runs (spring-framework issues 29450 and 30475). The
 * contract wants such a query handled like any other: a known parameter with that value is a 400
 * with the contract's message, an unknown one is ignored. So a stray {@code %} becomes {@code %25}
 * (its literal meaning under WHATWG form decoding) and a refused byte becomes its {@code %XX}
 * escape; targets that need neither, which is every well-formed request, pass through untouched
 * after one scan.
 */
@ChannelHandler.Sharable
final class RequestTargetEscaper extends ChannelInboundHandlerAdapter {

  static final RequestTargetEscaper INSTANCE = new RequestTargetEscaper();

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  private RequestTargetEscaper() {}

  @Override
  public void channelRead(ChannelHandlerContext ctx, Object msg) {
    if (msg instanceof HttpRequest request) {
      String target = request.uri();
      String escaped = escape(target);
      if (escaped != target) {
        request.setUri(escaped);
      }
    }
    ctx.fireChannelRead(msg);
  }

  /**
   * Returns {@code target} itself when {@code java.net.URI} accepts all of it, else a copy with the
   * refused characters escaped. Netty decodes the request line as ISO-8859-1, so each char is one
   * byte of the original target.
   */
  static String escape(String target) {
    int length = target.length();
    int first = 0;
    while (first < length && !refused(target, first)) {
      first++;
    }
    if (first == length) {
      return target;
    }
    StringBuilder out = new StringBuilder(length + 16).append(target, 0, first);
    for (int i = first; i < length; i++) {
      char c = target.charAt(i);
      if (refused(target, i)) {
        out.append('%').append(HEX[(c >> 4) & 0xF]).append(HEX[c & 0xF]);
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  /** Whether {@code java.net.URI} refuses the char at {@code i} in a path or query. */
  private static boolean refused(String s, int i) {
    char c = s.charAt(i);
    if (c == '%') {
      return i + 2 >= s.length() || !isHex(s.charAt(i + 1)) || !isHex(s.charAt(i + 2));
    }
    if (c <= 0x20 || c >= 0x7F) {
      return true; // controls, space, DEL and every non-ASCII byte
    }
    return "\"<>\\^`{|}[]".indexOf(c) >= 0;
  }

  private static boolean isHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }
}
