package serverlab.contract;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Contract v1 over HTTP against a real server, the same checks for every JVM stack.
 *
 * <p>A subclass starts its server its framework's way, listening on 127.0.0.1, and passes the
 * display name and the port to the constructor. Requests go out over HTTP/1.1 through the JDK's
 * {@link HttpClient}, or as raw bytes where {@link URI} refuses the target. No framework here: this
 * class ships in the module's test-jar, which the stacks depend on in test scope.
 */
public abstract class AbstractServerTest {

  // The contract's texts are spelled out here rather than taken from Reply: the test checks them.
  private static final String CONTENT_TYPE = "text/plain; charset=utf-8";

  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  private static final HttpClient CLIENT =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(TIMEOUT).build();

  private final String displayName;
  private final int port;

  protected AbstractServerTest(String displayName, int port) {
    this.displayName = displayName;
    this.port = port;
  }

  @Test
  void workdayForAGivenTime() throws Exception {
    HttpResponse<String> response = exchange("GET", "/workday?at=2019-05-05T10:00");
    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(header(response, "Content-Type")).hasValue(CONTENT_TYPE);
    assertThat(header(response, "Content-Length")).hasValue("10");
    assertThat(header(response, "Date")).isPresent();
    assertThat(response.body()).isEqualTo("2019-05-06");
  }

  @Test
  void helloAndKilobytes() throws Exception {
    HttpResponse<String> hello = exchange("GET", "/");
    assertThat(hello.statusCode()).isEqualTo(200);
    assertThat(hello.body())
        .matches(
            "Hello World, from "
                + Pattern.quote(displayName)
                + "! \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2}\\.\\d{3}");

    HttpResponse<String> kilobytes = exchange("GET", "/?n=100");
    assertThat(kilobytes.statusCode()).isEqualTo(200);
    assertThat(header(kilobytes, "Content-Length")).hasValue("100000");
    assertThat(kilobytes.body()).hasSize(100_000).matches("X+");
  }

  @Test
  void headHasGetsHeadersAndNoBody() throws Exception {
    for (String target : new String[] {"/", "/?n=10", "/workday"}) {
      String getLength = header(exchange("GET", target), "Content-Length").orElseThrow();
      HttpResponse<String> head = exchange("HEAD", target);
      assertThat(head.statusCode()).as("HEAD %s", target).isEqualTo(200);
      assertThat(header(head, "Content-Type")).hasValue(CONTENT_TYPE);
      assertThat(header(head, "Content-Length")).hasValue(getLength);
      assertThat(head.body()).isEmpty();
    }
  }

  @Test
  void badInputIs400WithTheContractMessage() throws Exception {
    HttpResponse<String> badN = exchange("GET", "/?n=101");
    assertThat(badN.statusCode()).isEqualTo(400);
    assertThat(header(badN, "Content-Type")).hasValue(CONTENT_TYPE);
    assertThat(badN.body()).isEqualTo("n must be an integer between 1 and 100");

    HttpResponse<String> badAt = exchange("GET", "/workday?at=2019-02-30T10:00");
    assertThat(badAt.statusCode()).isEqualTo(400);
    assertThat(badAt.body()).isEqualTo("at must be a local time formatted YYYY-MM-DDTHH:MM[:SS]");
  }

  @Test
  void otherMethodsAre405AndOtherPaths404() throws Exception {
    HttpResponse<String> post = exchange("POST", "/workday");
    assertThat(post.statusCode()).isEqualTo(405);
    assertThat(header(post, "Allow")).hasValue("GET, HEAD");
    assertThat(exchange("DELETE", "/").statusCode()).isEqualTo(405);
    assertThat(exchange("GET", "/workday/").statusCode()).isEqualTo(404);
    assertThat(exchange("GET", "/index.html").statusCode()).isEqualTo(404);
  }

  /** A stack whose server needs more raw-target checks overrides this and calls super. */
  @Test
  protected void malformedEscapesReachTheContract() throws IOException {
    // java.net.URI (and so HttpClient) refuses this target: send it as raw bytes.
    assertThat(rawGet("/?n=%ZZ"))
        .startsWith("HTTP/1.1 400 ")
        .contains("\r\nContent-Type: text/plain; charset=utf-8\r\n")
        .endsWith("\r\n\r\nn must be an integer between 1 and 100");
    assertThat(rawGet("/workday?at=%ZZ")).startsWith("HTTP/1.1 400 ").endsWith("[:SS]");
  }

  /** One request without a body through the shared client; the response body as UTF-8 text. */
  protected final HttpResponse<String> exchange(String method, String target)
      throws IOException, InterruptedException {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + target))
            .method(method, HttpRequest.BodyPublishers.noBody())
            .timeout(TIMEOUT)
            .build();
    return CLIENT.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  protected final String rawGet(String target) throws IOException {
    return rawRequest("GET", target);
  }

  /** The whole response to one request sent byte for byte, on a connection of its own. */
  protected final String rawRequest(String method, String target) throws IOException {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      socket.setSoTimeout((int) TIMEOUT.toMillis());
      OutputStream out = socket.getOutputStream();
      out.write(
          (method + " " + target + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      InputStream in = socket.getInputStream();
      return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
    }
  }

  private static Optional<String> header(HttpResponse<?> response, String name) {
    return response.headers().firstValue(name);
  }
}
